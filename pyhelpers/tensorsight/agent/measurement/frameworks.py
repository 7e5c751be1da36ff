"""What the training frameworks most users train with hand back, read the way they hand it back.

Called by the phase clock (``tensorsight.agent.measurement.phases``) on every top-level model pass, and by the
pipeline (``tensorsight.agent.measurement.pipeline``) around each optimizer step. Nothing here imports a framework:
the objects are read by duck typing, so a program that uses neither framework pays one ``isinstance`` per model pass.

- **A loss the model computes itself.** A Hugging Face ``transformers`` model called with ``labels`` returns a
  ``ModelOutput`` (an ordered mapping) whose ``loss`` is the mean cross-entropy of its ``logits``; the
  ``transformers.Trainer`` backpropagates it through ``accelerator.backward(loss)`` (which reaches
  ``torch.autograd.backward``, where the clock reads training losses), and its evaluation loop calls the model in eval
  mode under ``no_grad``: that pass's ``loss`` is the validation loss, with no loss module or function in sight.
- **How many classes the loss scores.** ``logits.shape[-1]`` of the same output (a language model's vocabulary), so
  the curve diagnosis can compare the cross-entropy with its chance level ``ln(classes)``.
- **Closure steps.** PyTorch Lightning's automatic optimisation (and ``LBFGS``) call ``optimizer.step(closure)``:
  the closure runs the forward, ``zero_grad`` and ``backward`` inside the step, so the gradients the step applies do
  not exist yet in the optimizer's step pre-hook. ``StepCalls`` tells the pipeline to read them once the step
  returned instead (and keeps the peak learning rate, which a schedule hides by the end of the run).
- **Gradient norms before clipping.** Both frameworks clip by default or on request (the Trainer's
  ``max_grad_norm=1.0``, Lightning's ``gradient_clip_val``) through ``torch.nn.utils.clip_grad_norm_``, so the
  gradients the optimizer sees are at most the clip norm however large they were. ``ClipWatch`` wraps that function
  and keeps the total norm it returns (the norm before clipping, which it computes anyway).

The pipeline holds one ``FrameworkWatch`` (the step hook and the clip wrapper, installed and removed together) and
hands what it saw to the curve diagnosis (``core.curves``: ``TrainingCurves.extra``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from typing import Any

from tensorsight.agent.measurement.scalars import learning_rate
from tensorsight.agent.runtime import op_calls
from tensorsight.agent.runtime.patches import Patches
from tensorsight.agent.runtime.transforming import skip_frames, transforming
from tensorsight.agent.runtime.untraced_hooks import untraced_hook


def _scalar_loss(torch: Any, value: Any) -> float | None:
    if isinstance(value, torch.Tensor) and value.numel() == 1 and value.is_floating_point():
        return float(value.detach())
    return None


def model_output_loss(torch: Any, output: Any) -> float | None:
    """The scalar loss a model put in its own output (``ModelOutput.loss``, or a ``"loss"`` key of a dict output);
    None when the output carries none (called without labels, or a plain tensor)."""
    if not isinstance(output, Mapping):
        return None
    try:
        return _scalar_loss(torch, output.get("loss"))
    except Exception:  # noqa: BLE001 - an odd mapping must not break the user's forward
        return None


def model_output_classes(torch: Any, output: Any) -> int | None:
    """How many classes a model's own loss scores: the last dimension of the ``logits`` next to a ``loss`` in its
    output (the vocabulary of a language model); None without both, or for a single output (regression)."""
    if not isinstance(output, Mapping):
        return None
    try:
        logits, loss = output.get("logits"), output.get("loss")
        if not isinstance(logits, torch.Tensor) or not isinstance(loss, torch.Tensor) or logits.dim() < 2:
            return None
        classes = int(logits.shape[-1])
    except Exception:  # noqa: BLE001
        return None
    return classes if classes >= 2 else None


def closure_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The closure handed to ``optimizer.step(closure)`` (``args`` without the optimizer), or None (``step()``)."""
    closure = kwargs.get("closure", args[0] if args else None)
    return closure if callable(closure) else None


class StepCalls:
    """What each ``optimizer.step()`` call was handed, from torch's global step pre-hook: a closure or not, and the
    learning rate it ran with (the peak is kept: a schedule decays the lr, the blow-up came from the peak).

    ``register(torch)`` installs the hook; ``ran_closure(optimizer)`` is asked by the pipeline in the step's post
    side (the same step: torch calls the pre- and post-hooks of one ``step()`` on one thread, in order).
    """

    def __init__(self) -> None:
        self._with_closure: set[int] = set()
        self._handle: Any = None
        self.peak_lr: float | None = None
        self.first_lr: float | None = None  # the rate of the first step (a warm-up then rises above it)

    def register(self, torch: Any) -> None:
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        if self._handle is None:
            self._handle = register_optimizer_step_pre_hook(untraced_hook(self._before_step))

    def remove(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
        self._with_closure.clear()

    def _before_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        try:
            positional = tuple(args or ())
            if positional and positional[0] is optimizer:  # torch hands the hook step's own args: self first
                positional = positional[1:]
            if closure_of(positional, dict(kwargs or {})) is not None:
                self._with_closure.add(id(optimizer))
            else:
                self._with_closure.discard(id(optimizer))
            lr = learning_rate(optimizer)
            if lr is not None and math.isfinite(lr) and self.first_lr is None:
                self.first_lr = lr
            if lr is not None and math.isfinite(lr) and (self.peak_lr is None or lr > self.peak_lr):
                self.peak_lr = lr
        except Exception:  # noqa: BLE001 - a hook must never break the user's step
            return None
        return None

    def ran_closure(self, optimizer: Any) -> bool:
        """True when the step of ``optimizer`` now ending was given a closure."""
        return id(optimizer) in self._with_closure


class ClipWatch:
    """The total gradient norms ``torch.nn.utils.clip_grad_norm_`` returned (before it clipped), by a thin wrapper
    that calls the original unchanged (as if from the caller's line, ``runtime.op_calls``) and re-raises what it
    raises; ``uninstall`` puts the original back."""

    def __init__(self, torch: Any) -> None:
        self._torch = torch
        self._patches = Patches("clip_watch")
        self.calls = 0
        self.peak: float | None = None  # the largest finite norm seen
        self.peak_clip: float | None = None  # the max_norm of the call that saw it

    def install(self) -> None:
        import torch.nn.utils.clip_grad as clip_grad

        if self._patches:
            return
        # torch.nn.utils re-exports the function: both names lead to the wrapper (programs call either)
        self._patches.replace((clip_grad, self._torch.nn.utils), "clip_grad_norm_", self._wrapper)

    def uninstall(self) -> None:
        self._patches.restore()

    def _wrapper(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def clip_grad_norm_(*args: Any, **kwargs: Any) -> Any:
            if transforming():  # torch is tracing the program's call: it is the program's alone
                return original(*args, **kwargs)
            # run from the caller's line: a warning torch raises in there keeps the program's location
            total = op_calls.call_as_caller(original, args, kwargs, sys._getframe(1))
            self._observe(total, kwargs.get("max_norm", args[1] if len(args) > 1 else None))
            return total

        skip_frames(clip_grad_norm_.__code__, calls_too=False)
        return clip_grad_norm_

    def _observe(self, total: Any, max_norm: Any) -> None:
        try:
            value = float(total)
        except Exception:  # noqa: BLE001 - whatever a patched torch returns, the program's call goes on
            return
        self.calls += 1
        if math.isfinite(value) and (self.peak is None or value > self.peak):
            self.peak = value
            try:
                self.peak_clip = float(max_norm) if max_norm is not None else None
            except (TypeError, ValueError):
                self.peak_clip = None


class FrameworkWatch:
    """The pipeline's one handle on this module: ``StepCalls`` and ``ClipWatch`` installed together (the step hook
    before the phase clock's, which asks it), and what they add to the curves."""

    def __init__(self, torch: Any) -> None:
        self._torch = torch
        self.steps = StepCalls()
        self.clips = ClipWatch(torch)

    def install(self) -> None:
        self.steps.register(self._torch)
        self.clips.install()

    def uninstall(self) -> None:
        self.steps.remove()
        self.clips.uninstall()

    def ran_closure(self, optimizer: Any) -> bool:
        return self.steps.ran_closure(optimizer)

    def curve_extra(self, classes: int | None) -> dict[str, Any]:
        """``TrainingCurves.extra``: the classes a model's own loss scores (seen by the phase clock), the first and
        peak learning rates, the largest gradient norm before clipping and the clip norm it was clipped to."""
        extra: dict[str, Any] = {"peak_lr": self.steps.peak_lr, "first_lr": self.steps.first_lr}
        if classes:
            extra["classes"] = classes
        if self.clips.peak is not None:
            extra["grad_norm_before_clipping"] = self.clips.peak
            extra["clip_norm"] = self.clips.peak_clip
        return extra
