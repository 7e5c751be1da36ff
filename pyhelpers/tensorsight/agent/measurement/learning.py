"""Did the parameters learn? Run-time evidence that part of a model never trains, or trains on the wrong gradients.

Armed by ``tensorsight.agent.measurement.pipeline`` with the phase clock (``LearningWatch`` listens to its steps,
model passes and backward calls; the graph-reuse explainer is registered with ``agent.runtime.excepthook``, which the
doctor and the debugger's exception hook call). Each check reads what really happened in the program:

- **parameters that never receive a gradient**: an optimizer holds trainable parameters (``requires_grad``) and some
  of them hold no gradient at any of its steps while the others do (a head layer run under ``torch.no_grad()``, a
  branch cut by ``.detach()``). Deliberate fine-tuning freezes with ``requires_grad=False``: those are not counted.
  An optimizer none of whose parameters get a gradient is ``gradient_clearing``'s finding, not this one;
- **frozen weights never trained**: an optimizer holds parameters of ``torch.nn`` layers with ``requires_grad=False``
  that no ``load_state_dict`` filled, in a model of the user's own classes, and no ``torch.load`` ran before
  training: they keep their random initialisation (``agent.measurement.frozen``); the finding goes to the line that
  froze them;
- **parameters no optimizer holds**: parameters of a trained model that receive gradients, while every optimizer
  steps on other tensors (a GAN's generator optimizer built on the discriminator's parameters): they never change.
  The finding goes to the optimizer that holds another optimizer's parameters when there is one, else to the first;
- **backward through an evaluation-mode forward**: a loss is backpropagated from a model left in ``eval()`` (dropout
  off, batch-norm statistics frozen) after it trained in train mode, or after an explicit ``eval()``. ``Module.train``
  is wrapped (``eval()`` calls it) to remember the user line that switched each model to evaluation;
- **hand-written updates on gradients nobody clears**: ``p -= lr * p.grad`` with no ``p.grad = None`` or ``zero_()``:
  the same gradient tensor, written only by the backward passes, across two updates in a row. The update's curves
  are then not judged (a "learning rate too high" verdict would blame the wrong cause);
- **backward through the graph a second time**: the program raises; the explainer names the tensor reused from the
  previous backward (read from the source above the failing line) and the ``.detach()`` fix, at the line that fed
  that tensor to the previous backward's loss (where the ``.detach()`` goes; a GAN's ``netD(fake)`` in the
  discriminator step), naming the line that raised. The exception is left to propagate as it would.

Read-only: ``.grad`` identity and ``_version``, ``training`` flags, weak references; no tensor is written, no RNG
drawn, no graph built. While torch compiles, traces or exports, the ``train`` wrapper only calls through.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tensorsight.agent.measurement.data_checks import argument_written_at_line
from tensorsight.agent.runtime import steps
from tensorsight.agent.runtime.guard import never_raise
from tensorsight.agent.runtime.patches import Patches
from tensorsight.agent.runtime.transforming import skip_frames, transforming
from tensorsight.agent.runtime.untraced_hooks import untraced_hook
from tensorsight.core.findings import Finding, place_text
from tensorsight.core.l10n import t

MIN_STEPS = 3  # steps an optimizer must take before its parameters without gradients are judged
SCAN_STEPS = 8  # the first steps at which parameters outside every optimizer are looked for (then every SCAN_EVERY)
SCAN_EVERY = 50
UNCLEARED_UPDATES = 2  # hand-written updates in a row on the same, never-cleared gradient tensor
NAMES_SHOWN = 4
REUSE_SCAN_LINES = 60


@dataclass
class _HandProbe:
    param: weakref.ReferenceType[Any]
    grad: weakref.ReferenceType[Any]
    version: int
    backwards: int
    uncleared: int = 0
    per_update: int = 1  # the backward() calls between the last two updates


class LearningWatch:
    """The run-time learning checks (see the module docstring); ``report`` receives each finding."""

    def __init__(
        self,
        torch: Any,
        clock: Any,
        report: Callable[[Finding], None],
        uncleared: set[int],
        name_of: Callable[[Any], str | None] = lambda _optimizer: None,
    ) -> None:
        self._torch = torch
        self._clock = clock
        self._report = report
        self._uncleared = uncleared  # the pipeline's set of update keys whose curves are not judged
        self._name_of = name_of
        self._pending: dict[int, dict[int, weakref.ReferenceType[Any]]] = {}  # optimizer -> params never with a grad
        self._learned: set[int] = set()  # optimizers with at least one parameter that got a gradient
        self._steps: dict[int, int] = {}
        self._optimizers: dict[int, weakref.ReferenceType[Any]] = {}
        self._held: set[int] = set()  # ids of every parameter an optimizer holds
        self._outside: dict[int, str] = {}  # names of the parameters with a gradient no optimizer holds
        self._names: dict[int, str] = {}  # parameter id -> module path name, learned while the models live
        self._named_models: set[int] = set()
        self._built: dict[int, tuple[tuple[str, int] | None, str | None]] = {}  # optimizer -> (its line, its name)
        self._sharing: int | None = None  # an optimizer built on parameters another optimizer already holds
        self._real_steps = 0
        self._hand: _HandProbe | None = None
        self._hand_reported = False
        self._backward_globals: dict[str, Any] | None = None  # the module namespace of the latest backward() call
        self._eval_at: weakref.WeakKeyDictionary[Any, tuple[str, int]] = weakref.WeakKeyDictionary()
        self._trained: weakref.WeakSet[Any] = weakref.WeakSet()
        self._mode_layers: dict[int, bool] = {}
        self._last_pass: tuple[weakref.ReferenceType[Any], bool] | None = None  # (model, in eval with gradients)
        # (model, its eval() line, the backward line) of a backward through an eval-mode forward, until an update
        self._eval_backward: tuple[weakref.ReferenceType[Any], tuple[str, int] | None, tuple[str, int] | None] | None
        self._eval_backward = None
        self._eval_reported: set[int] = set()
        self._train_depth = 0
        self._loaded: set[int] = set()  # ids of the parameters of every module a load_state_dict filled
        self._torch_loaded = False  # torch.load ran (a whole pickled model, weights assigned by hand)
        self._frozen: dict[int, dict[int, str]] = {}  # optimizer -> its frozen, never-loaded parameters at step 1
        self._patches = Patches("learning")
        self.finished = False
        self.explained: set[int] = set()  # optimizers whose curves the findings here explain (not judged again)

    # ---------------------------------------------------------------------------------------------- installation
    def install(self) -> None:
        clock = self._clock
        clock.before_step_listeners.append(self.before_step)
        clock.step_listeners.append(self.on_step)
        clock.model_input_listeners.append(self.model_pass)
        clock.backward_listeners.append(self.backward)
        self._patches.replace(self._torch.nn.Module, "train", self._observing_train)
        self._patches.replace(self._torch.nn.Module, "load_state_dict", self._observing_load)
        self._patches.replace(self._torch, "load", self._observing_torch_load)

    def uninstall(self) -> None:
        self._patches.restore()
        clock = self._clock
        for listeners, listener in (
            (clock.before_step_listeners, self.before_step),
            (clock.step_listeners, self.on_step),
            (clock.model_input_listeners, self.model_pass),
            (clock.backward_listeners, self.backward),
        ):
            if listener in listeners:
                listeners.remove(listener)

    def _observing_train(self, original: Callable[..., Any]) -> Callable[..., Any]:
        noted = untraced_hook(self._mode_set)

        def train(module: Any, mode: bool = True) -> Any:
            if transforming():
                return original(module, mode)
            self._train_depth += 1
            try:
                return original(module, mode)
            finally:
                self._train_depth -= 1
                if not self._train_depth:  # the outermost call: the one the program made
                    noted(module, mode)

        skip_frames(train.__code__, calls_too=False)
        return train

    def _observing_load(self, original: Callable[..., Any]) -> Callable[..., Any]:
        noted = untraced_hook(self._loaded_into)

        def load_state_dict(module: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(module, *args, **kwargs)
            noted(module)
            return result

        skip_frames(load_state_dict.__code__, calls_too=False)
        return load_state_dict

    def _observing_torch_load(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def load(*args: Any, **kwargs: Any) -> Any:
            self._torch_loaded = True
            return original(*args, **kwargs)

        skip_frames(load.__code__, calls_too=False)
        return load

    @never_raise()
    def _loaded_into(self, module: Any) -> None:
        self._loaded.update(id(param) for param in module.parameters())

    @never_raise()
    def _mode_set(self, module: Any, mode: Any) -> None:
        if mode:
            self._eval_at.pop(module, None)
            return
        from tensorsight.agent.measurement.phases import caller_location

        where = caller_location(sys._getframe(1))
        if where is not None:
            self._eval_at[module] = where

    # ------------------------------------------------------------------------------------------- optimizer steps
    @never_raise()
    def before_step(self, optimizer: Any, _step: int = 0) -> None:
        """At each step (before it applies the gradients): which parameters hold a gradient."""
        if isinstance(optimizer, steps.HandWrittenUpdate):
            return  # called after each backward, before any update: the update itself reaches ``on_step``
        if self._eval_backward is not None:
            self._applied()
        key = id(optimizer)
        pending = self._pending.get(key)
        if pending is None:
            if key in self._optimizers:
                pending = {}
            else:
                pending = self._start(optimizer)
        self._steps[key] = self._steps.get(key, 0) + 1
        if pending:
            for pid, ref in list(pending.items()):
                param = ref()
                if param is None or getattr(param, "grad", None) is not None:
                    del pending[pid]
                    if param is not None:
                        self._learned.add(key)
            if not pending:
                self._pending.pop(key, None)
        self._real_steps += 1
        if self._real_steps <= SCAN_STEPS or self._real_steps % SCAN_EVERY == 0:
            self._scan_outside()

    def _start(self, optimizer: Any) -> dict[int, weakref.ReferenceType[Any]]:
        pending: dict[int, weakref.ReferenceType[Any]] = {}
        self._optimizers[id(optimizer)] = weakref.ref(optimizer)
        self._built[id(optimizer)] = (self._clock.optimizer_at(optimizer), self._name_of(optimizer))
        self._learn_names()
        for group in optimizer.param_groups:
            for param in group["params"]:
                if id(param) in self._held and self._sharing is None:
                    self._sharing = id(optimizer)  # the later-built of two optimizers holding the same parameters
                self._held.add(id(param))
                if getattr(param, "requires_grad", False):
                    if getattr(param, "grad", None) is not None:
                        self._learned.add(id(optimizer))
                    else:
                        pending[id(param)] = weakref.ref(param)
        self._pending[id(optimizer)] = pending
        if not self._torch_loaded:
            from tensorsight.agent.measurement.frozen import frozen_at_start

            frozen = frozen_at_start(optimizer, self._clock.models(), self._loaded)
            if frozen:
                self._frozen[id(optimizer)] = frozen
        return pending

    def _scan_outside(self) -> None:
        for model in self._clock.models():
            for param in model.parameters():
                if id(param) not in self._held and getattr(param, "grad", None) is not None:
                    if id(param) not in self._names:
                        self._named_models.discard(id(model))
                        self._learn_names()
                    self._outside.setdefault(id(param), self._names.get(id(param), f"tensor{tuple(param.shape)}"))

    # ---------------------------------------------------------------------------------------- hand-written updates
    @never_raise()
    def on_step(self, record: Any) -> None:
        """A completed step: a hand-written update is judged on whether its gradients were cleared since the last."""
        update = record.optimizer
        if isinstance(update, steps.HandWrittenUpdate) and self._eval_backward is not None:
            self._applied()
        if not isinstance(update, steps.HandWrittenUpdate) or self._hand_reported:
            return
        backwards = self._clock.backwards
        probe = self._hand
        param = probe.param() if probe is not None else None
        grad: Any = getattr(param, "grad", None) if param is not None else None
        same = probe is not None and grad is not None and probe.grad() is grad
        if probe is not None and same:
            new = backwards - probe.backwards
            probe.uncleared = probe.uncleared + 1 if new >= 1 and grad._version - probe.version <= new else 0
            probe.version, probe.backwards, probe.per_update = grad._version, backwards, new
            if probe.uncleared >= UNCLEARED_UPDATES:
                self._hand_reported = True
                self._uncleared.add(id(update))
                self._hand_uncleared(probe.per_update)
            return
        param = _first_with_grad(update)
        if param is not None:
            self._hand = _HandProbe(weakref.ref(param), weakref.ref(param.grad), param.grad._version, backwards)

    def _hand_uncleared(self, per_update: int) -> None:
        """Reported as gradients never cleared under an optimizer are: at the one ``backward()`` each update applies
        (where its clearing belongs, right above it), at the update when it applies several (accumulation)."""
        loss_at = self._clock.loss_at
        update_at = hand_update_at(loss_at) or update_in_helper(loss_at, self._backward_globals)
        where = loss_at if per_update == 1 or update_at is None else update_at
        if where is None:
            return
        # the bug TS101 names (one problem with it): gradients never cleared, applied here by hand
        details: dict[str, Any] = {
            "check": "gradients-never-cleared",
            "hand_written": True,
            "updates": UNCLEARED_UPDATES,
        }
        if update_at is not None and where != update_at:
            message = t(
                "This backward() adds into .grad that nothing clears before the hand-written update at {update} "
                "applies it: each update uses the sum of every earlier batch's gradients and the steps grow. Clear "
                "them before this backward() (model.zero_grad()), or after the update (p.grad = None)",
                update=place_text(update_at[0], update_at[1], where[0]),
            )
            details["update"] = {"file": update_at[0], "line": update_at[1]}
        else:
            message = t(
                "This hand-written update applies gradients that are never cleared: backward() adds into .grad, so "
                "each update uses the sum of every earlier batch's gradients and the steps grow. Clear them after the "
                "update (p.grad = None, or p.grad.zero_(), inside the same torch.no_grad() block)"
            )
        self._report(Finding("training-logic", "warning", message, where[0], where[1], details=details))

    # -------------------------------------------------------------------------------------------- evaluation mode
    @never_raise()
    def model_pass(self, module: Any, _args: Any, split: str) -> None:
        grad = bool(self._torch.is_grad_enabled())
        if module.training and grad:
            self._trained.add(module)
            self._eval_backward = None  # a training pass came before any update applied that backward
        self._last_pass = (weakref.ref(module), grad and not module.training)

    @never_raise()
    def backward(self, tensors: Any) -> None:
        if not self._real_steps and not self._hand_reported:  # where a hand-written update's helper is looked up
            from tensorsight.agent.measurement.phases import caller_frame

            frame = caller_frame(sys._getframe(1))
            self._backward_globals = frame.f_globals if frame is not None else None
        last = self._last_pass
        if last is None or not last[1]:
            return
        module = last[0]()
        if module is None or id(module) in self._eval_reported or not self._has_mode_layers(module):
            return
        eval_at = self._eval_at.get(module)
        if module not in self._trained and eval_at is None:
            return  # never trained in train mode, never switched by the program: backward in eval on purpose
        from tensorsight.agent.measurement.phases import caller_location

        # judged at the next parameter update: a backward in eval mode that nothing applies (saliency maps, input
        # gradients after training) is no training bug
        self._eval_backward = (weakref.ref(module), eval_at, caller_location(sys._getframe(1)))

    def _applied(self) -> None:
        """A parameter update: a backward in eval mode since the last one trained the model in eval mode."""
        pending, self._eval_backward = self._eval_backward, None
        if pending is None:
            return
        module = pending[0]()
        if module is None or id(module) in self._eval_reported:
            return
        self._eval_reported.add(id(module))
        eval_at, backward_at = pending[1], pending[2]
        where = eval_at or backward_at
        if where is None:
            return
        layers = self._layer_kinds(module)
        name = type(module).__name__
        if eval_at is not None:
            message = t(
                "{model} was switched to evaluation mode here and never back: the loss backpropagated at {at} "
                "comes from a forward pass in eval mode (what changes in training mode, {layers}, behaves as at test "
                "time). Call {model}.train() after evaluating, before the next training step",
                model=name,
                at=_short(backward_at),
                layers=layers,
            )
        else:
            message = t(
                "This backward() goes through a forward pass of {model} in evaluation mode (what changes in training "
                "mode, {layers}, behaves as at test time). Call {model}.train() before training",
                model=name,
                layers=layers,
            )
        details: dict[str, Any] = {"check": "backward-in-eval-mode", "model": name}
        if backward_at is not None:
            details["backward_line"] = backward_at[1]
        self._report(Finding("training-logic", "warning", message, where[0], where[1], details=details))

    def _has_mode_layers(self, module: Any) -> bool:
        known = self._mode_layers.get(id(module))
        if known is None:
            known = self._mode_layers[id(module)] = bool(self._layer_kinds(module))
        return known

    def _layer_kinds(self, module: Any) -> str:
        """What makes ``module`` behave differently in training mode (``evaluation.training_mode_layers``: dropout,
        batch norm, a forward of the program's own that reads ``self.training``, such as ``F.dropout(x, p,
        training=self.training)``), as words; empty when nothing does."""
        from tensorsight.agent.measurement.evaluation import training_mode_layers

        return ", ".join(sorted({kind for _, _, kind in training_mode_layers(self._torch, module)}))

    # ---------------------------------------------------------------------------------------------- end of run
    @never_raise()
    def finish(self) -> None:
        """Judge the parameters over the whole run: those that never got a gradient, those no optimizer holds.

        Reads only what the steps recorded (names, lines): the program's objects are usually gone by now."""
        if self.finished:
            return
        self.finished = True
        for key, pending in list(self._pending.items()):
            if not pending or key not in self._learned or self._steps.get(key, 0) < MIN_STEPS:
                continue
            self._never_gradient(key, [self._names.get(pid, "?") for pid in pending])
        for key, frozen in self._frozen.items():
            if key in self._learned and self._steps.get(key, 0) >= MIN_STEPS:
                self._frozen_untrained(key, list(frozen.values()))
        outside = [name for pid, name in self._outside.items() if pid not in self._held]
        if outside and self._real_steps >= MIN_STEPS:
            self._not_held(outside)

    def _never_gradient(self, key: int, params: list[str]) -> None:
        where, name = self._built.get(key, (None, None))
        if where is None:
            return
        name = name or "optimizer"
        message = t(
            "{count} trainable parameter(s) of {name} never received a gradient in {steps} steps, so they never "
            "learn: {params}. Their part of the model does not reach the loss through autograd (run under "
            "torch.no_grad(), cut by .detach(), or not used in forward); if they are meant to stay frozen, set "
            "requires_grad=False and leave them out of the optimizer",
            count=len(params),
            name=name,
            steps=self._steps.get(key, 0),
            params=_listing(params),
        )
        details = {"check": "parameters-never-learn", "optimizer": name, "parameters": params}
        self.explained.add(key)
        self._report(Finding("training-logic", "warning", message, where[0], where[1], details=details))

    def _frozen_untrained(self, key: int, params: list[str]) -> None:
        from tensorsight.agent.measurement.frozen import freeze_line

        built, name = self._built.get(key, (None, None))
        if built is None:
            return
        where = freeze_line([built[0]], params) or built
        message = t(
            "{count} parameter(s) are frozen (requires_grad=False) while they still hold their random "
            "initialisation: no load_state_dict() filled them, so that part of the model never learns: {params}. "
            "{name} holds them but never updates them ({steps} steps). Freeze only weights loaded from a trained "
            "model, or remove the freeze",
            count=len(params),
            params=_listing(params),
            name=name or "optimizer",
            steps=self._steps.get(key, 0),
        )
        details: dict[str, Any] = {"check": "frozen-at-initialisation", "parameters": params}
        if where != built:
            details["optimizer_line"] = built[1]
        self.explained.add(key)
        self._report(Finding("training-logic", "warning", message, where[0], where[1], details=details))

    def _not_held(self, params: list[str]) -> None:
        at_key = self._sharing
        where, name = self._built.get(at_key, (None, None)) if at_key is not None else (None, None)
        if where is None:
            where, at_key = next(iter(self._built.values()), (None, None))[0], None
        if where is None:
            return
        shared = (
            t(" {0} holds parameters another optimizer already holds: was it given the wrong model's parameters?", name)
            if at_key is not None
            else ""
        )
        message = t(
            "{count} parameter(s) receive gradients but no optimizer holds them, so they never learn: "
            "{params}.{shared} Give each model's parameters to its own optimizer",
            count=len(params),
            params=_listing(params),
            shared=shared,
        )
        details: dict[str, Any] = {"check": "parameters-in-no-optimizer", "parameters": params}
        # the parameter list made above the constructor (``groups = param_groups(...)``): that line chose them
        given = argument_written_at_line(where, 0, "params")
        if given is not None:
            details["optimizer_line"] = where[1]
            where = (where[0], given)
        self._report(Finding("training-logic", "warning", message, where[0], where[1], details=details))

    def _learn_names(self) -> None:
        """Module path names of the parameters of every model seen so far (``Generator.net.0.weight``)."""
        for model in self._clock.models():
            if id(model) in self._named_models:
                continue
            self._named_models.add(id(model))
            prefix = type(model).__name__
            for name, param in model.named_parameters():
                self._names.setdefault(id(param), f"{prefix}.{name}")


# ------------------------------------------------------------------------------------------- graph reuse explainer
_REUSE = "backward through the graph a second time"
_ASSIGNED = re.compile(r"^\s*([A-Za-z_]\w*)\s*=[^=]")


def explain_graph_reuse(exc: BaseException) -> list[Finding] | None:
    """A ``training-logic`` finding for "Trying to backward through the graph a second time" (None otherwise)."""
    if _REUSE not in str(exc):
        return None
    from tensorsight.agent.measurement.memory import _user_line_of

    where = _user_line_of(exc.__traceback__)
    if where is None:
        return None
    reused = reused_tensor(where[0], where[1])
    fed = fed_before_previous_backward(reused, where[0], where[1]) if reused else None
    if reused and fed is not None:  # the line to fix: where the tensor feeds the loss of the previous backward
        message = t(
            "`{tensor}` feeds this loss with its graph; this loss's backward() frees that graph and the backward() "
            "at line {line} walks it again, so PyTorch raises `Trying to backward through the graph a second time`. "
            "Use `{tensor}.detach()` here (a GAN's discriminator step scores netD(fake.detach())), or recompute it; "
            "retain_graph=True only hides the bug",
            tensor=reused,
            line=where[1],
        )
        details = {"check": "graph-reused", "tensor": reused, "raised_line": where[1]}
        return [Finding("training-logic", "error", message, where[0], fed, details=details)]
    which = t(" `{0}` was computed before the previous backward() and used again after it.", reused) if reused else ""
    fix = f"`{reused}.detach()`" if reused else "`.detach()`"
    message = t(
        "backward() walks a graph whose buffers the previous backward() already freed: a tensor from an earlier "
        "step's graph is reused.{which} Use {fix} where that tensor feeds the other loss (a GAN's discriminator step "
        "scores netD(fake.detach())), or recompute it; retain_graph=True only hides the bug",
        which=which,
        fix=fix,
    )
    details = {"check": "graph-reused", "tensor": reused}
    return [Finding("training-logic", "error", message, where[0], where[1], details=details)]


def reused_tensor(path: str, line: int) -> str | None:
    """The variable assigned above the previous ``backward()`` (in the same block of source) and used, without
    ``.detach()``, between it and ``line``: the tensor whose graph the second backward walks again."""
    previous = None
    lines: dict[int, str] = {}
    for number in range(line - 1, max(0, line - REUSE_SCAN_LINES), -1):
        text = linecache.getline(path, number)
        lines[number] = text.split("#", 1)[0]
        if previous is None and ".backward(" in lines[number]:
            previous = number
            break
    if previous is None:
        return None
    between = " ".join(lines[n] for n in range(previous + 1, line + 1) if n in lines) + linecache.getline(path, line)
    for number in range(previous - 1, max(0, previous - REUSE_SCAN_LINES), -1):
        text = linecache.getline(path, number).split("#", 1)[0]
        if text.lstrip().startswith(("def ", "class ")):
            return None
        match = _ASSIGNED.match(text)
        if match is None:
            continue
        name = match.group(1)
        used = re.search(rf"\b{re.escape(name)}\b(?!\s*\.detach\(\))", between)
        reassigned = re.search(rf"^\s*{re.escape(name)}\s*=[^=]", between, re.MULTILINE)
        if used and not reassigned and _fed_at(name, path, previous) is not None:
            return name
    return None


def _fed_at(name: str, path: str, previous: int) -> int | None:
    """The line nearest above the previous backward (``previous``) that passes ``name`` to a call, before its
    assignment; None when none does."""
    call = re.compile(rf"\(\s*{re.escape(name)}\s*[,)]")
    for number in range(previous, max(0, previous - REUSE_SCAN_LINES), -1):
        text = linecache.getline(path, number).split("#", 1)[0]
        if call.search(text):
            return number
        if re.match(rf"^\s*{re.escape(name)}\s*=[^=]", text):
            return None
    return None


def fed_before_previous_backward(name: str, path: str, line: int) -> int | None:
    """Where ``name`` (the tensor ``reused_tensor`` names for the backward at ``line``) was fed to the loss of the
    previous backward: the line that should have passed ``name.detach()``."""
    for number in range(line - 1, max(0, line - REUSE_SCAN_LINES), -1):
        if ".backward(" in linecache.getline(path, number).split("#", 1)[0]:
            return _fed_at(name, path, number)
    return None


# --------------------------------------------------------------------------------------------------- helpers
_CALLED = re.compile(r"^\s*([A-Za-z_]\w*)\(")


def update_in_helper(backward_at: tuple[str, int] | None, namespace: dict[str, Any] | None) -> tuple[str, int] | None:
    """The hand-written update inside the helper called right after ``backward()`` (``sgd_step(model, lr)``): the
    helper is the plain function of that name in the caller's module namespace; its source is read, never run."""
    if backward_at is None or namespace is None:
        return None
    path, line = backward_at
    for number in range(line + 1, line + 6):
        match = _CALLED.match(linecache.getline(path, number).split("#", 1)[0])
        if match is None:
            continue
        code = getattr(namespace.get(match.group(1)), "__code__", None)
        if code is None:
            continue
        # the helper's first line stands for a backward() just above its body
        return hand_update_at((os.path.abspath(code.co_filename), code.co_firstlineno))
    return None


def _listing(params: list[str]) -> str:
    shown = params[:NAMES_SHOWN]
    more = len(params) - len(shown)
    return ", ".join(shown) + (t(" and {0} more", more) if more > 0 else "")


def _short(where: tuple[str, int] | None) -> str:
    return f"{os.path.basename(where[0])}:{where[1]}" if where is not None else "?"


def _first_with_grad(update: Any) -> Any:
    for group in update.param_groups:
        for param in group["params"]:
            if getattr(param, "grad", None) is not None:
                return param
    return None


_IN_PLACE = re.compile(r"\.(add_|sub_|addcmul_|addcdiv_|copy_|mul_)\(|[-+]=|\.data\s*=[^=]")
HAND_UPDATE_SCAN = 40  # lines after the backward() call searched for the hand-written update


def hand_update_at(backward_at: tuple[str, int] | None) -> tuple[str, int] | None:
    """The line of a hand-written update after ``backward()`` (``p.data.add_(p.grad, alpha=-lr)``,
    ``p -= lr * p.grad``, ``w.data = w.data - lr * w.grad``): the first in-place write that reads a ``.grad`` within
    the same block of source; None when there is none (the verdict then stays at the backward line)."""
    if backward_at is None:
        return None
    path, line = backward_at
    first = linecache.getline(path, line)
    indent = len(first) - len(first.lstrip())
    for number in range(line + 1, line + 1 + HAND_UPDATE_SCAN):
        text = linecache.getline(path, number)
        if not text:
            return None
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        depth = len(text) - len(text.lstrip())
        left_function = (indent > 0 and depth == 0) or (depth < indent and stripped.startswith(("def ", "class ", "@")))
        if left_function or (depth <= indent and stripped.startswith("return")):
            return None
        code = stripped.split("#", 1)[0]
        if ".grad" in code and _IN_PLACE.search(code) and not code.startswith(("if ", "while ", "assert ")):
            return (path, number)
    return None
