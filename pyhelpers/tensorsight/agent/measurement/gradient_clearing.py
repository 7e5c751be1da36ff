"""Gradients cleared per optimizer: a step that applies gradients nobody cleared since this optimizer's last step.

Armed by ``tensorsight.agent.measurement.pipeline`` with the phase clock. ``backward()`` adds into ``.grad``; a loop
with two optimizers (a GAN's D and G, an actor-critic) must clear each one's gradients: ``netD.zero_grad()`` clears
only D's parameters, however close it sits to G's step. The static rule cannot tell whose gradients a
``zero_grad()`` clears; at run time it is plain:

- each optimizer has a probe, the first of its parameters holding a gradient, read at its step (pre-hook);
- a clearing since that optimizer's previous step is any of: ``optimizer.zero_grad()`` on it, ``module.zero_grad()`` on
  a module that holds the probe (both observed through thin wrappers around torch's methods), a new gradient tensor
  (``zero_grad(set_to_none=True)``, ``p.grad = None``), or an in-place write beyond what the backward passes and
  gradient clippings since then account for (``p.grad.zero_()``: the gradient's ``_version`` moved more than once
  per backward and per ``clip_grad_norm_``/``clip_grad_value_`` call, also observed through thin wrappers);
- a step with none of them, twice in a row, is a ``training-logic`` finding at that step's line.

Deliberate gradient accumulation (a step every N batches, then ``zero_grad()``) clears once per step: no finding.
Read-only: ``_version``, object identity and weak references; no tensor is touched.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tensorsight.agent.runtime.guard import never_raise
from tensorsight.core.findings import Finding

UNCLEARED_STEPS = 2  # consecutive steps on uncleared gradients before the finding (one could be a warm-up trick)
_WRAPPED_MARK = "__tensorsight_clearing__"


@dataclass
class _Probe:
    param: weakref.ReferenceType[Any]
    grad: weakref.ReferenceType[Any] | None
    version: int
    backwards: int
    clippings: int = 0
    cleared: bool = False
    uncleared_steps: int = 0
    reported: bool = False


class ClearingWatch:
    """The per-optimizer clearing check; ``report`` receives each finding (the pipeline publishes it)."""

    def __init__(
        self,
        torch: Any,
        backwards: Callable[[], int],
        where: Callable[[], tuple[str, int] | None],
        report: Callable[[Finding], None],
    ) -> None:
        self._torch = torch
        self._backwards = backwards  # how many backward() calls the program made so far
        self._where = where  # the user line calling optimizer.step() (read in the pre-hook)
        self._report = report
        self._probes: dict[int, _Probe] = {}
        self._clippings = 0  # clip_grad_norm_ / clip_grad_value_ calls: each writes every gradient in place once
        self._names: dict[int, str] = {}
        self.reported: set[int] = set()  # ids of the optimizers found stepping on uncleared gradients
        self._wrapped: list[tuple[Any, str, Any, Any]] = []

    # ---------------------------------------------------------------------------------------------- installation
    def install(self) -> None:
        torch = self._torch
        self._wrap(torch.optim.Optimizer, "zero_grad", self._optimizer_cleared)
        self._wrap(torch.nn.Module, "zero_grad", self._module_cleared)
        import torch.nn.utils.clip_grad as clip_grad

        for owner in (torch.nn.utils, clip_grad):
            for name in ("clip_grad_norm_", "clip_grad_value_"):
                if hasattr(owner, name):
                    self._wrap(owner, name, self._clipped)

    def uninstall(self) -> None:
        for owner, name, original, wrapper in reversed(self._wrapped):
            if getattr(owner, name, None) is wrapper:
                setattr(owner, name, original)
        self._wrapped.clear()

    def _wrap(self, owner: Any, name: str, after: Callable[[Any], None]) -> None:
        original = getattr(owner, name)
        if getattr(original, _WRAPPED_MARK, False):
            return

        def observing(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            after(args[0] if args else None)
            return result

        wrapper = functools.wraps(original)(observing)
        setattr(wrapper, _WRAPPED_MARK, True)
        setattr(owner, name, wrapper)
        self._wrapped.append((owner, name, original, wrapper))

    # --------------------------------------------------------------------------------------------------- clearing
    def _clipped(self, _parameters: Any) -> None:
        self._clippings += 1

    @never_raise()
    def _optimizer_cleared(self, optimizer: Any) -> None:
        probe = self._probes.get(id(optimizer))
        if probe is not None:
            probe.cleared = True

    @never_raise()
    def _module_cleared(self, module: Any) -> None:
        waiting = [(probe, probe.param()) for probe in self._probes.values() if not probe.cleared]
        waiting = [(probe, param) for probe, param in waiting if param is not None]
        if not waiting:
            return
        for param in module.parameters():
            for probe, probed in waiting:
                if param is probed:
                    probe.cleared = True

    # ------------------------------------------------------------------------------------------------------ steps
    @never_raise()
    def before_step(self, optimizer: Any, name: str | None = None) -> None:
        """In the optimizer's step pre-hook: judge the gradients it is about to apply, then re-arm its probe."""
        if name:
            self._names[id(optimizer)] = name
        backwards = self._backwards()
        probe = self._probes.get(id(optimizer))
        param = probe.param() if probe is not None else None
        if param is None or getattr(param, "grad", None) is None:
            param = _first_with_grad(optimizer)
            if param is None:
                return
        grad = param.grad
        if probe is not None and probe.param() is param:
            same_tensor = probe.grad is not None and probe.grad() is grad
            allowed = (backwards - probe.backwards) + (self._clippings - probe.clippings)
            written_by_backward_only = grad._version - probe.version <= allowed
            accumulated = same_tensor and written_by_backward_only and not probe.cleared
            accumulated = accumulated and backwards > probe.backwards  # a step with no new backward adds nothing
            probe.uncleared_steps = probe.uncleared_steps + 1 if accumulated else 0
            if probe.uncleared_steps >= UNCLEARED_STEPS and not probe.reported:
                probe.reported = True
                self._found(optimizer)
        else:
            probe = _Probe(weakref.ref(param), None, 0, backwards)
            self._probes[id(optimizer)] = probe
            weakref.finalize(optimizer, self._probes.pop, id(optimizer), None)
        probe.grad = weakref.ref(grad)
        probe.version = grad._version
        probe.backwards = backwards
        probe.clippings = self._clippings
        probe.cleared = False

    def _found(self, optimizer: Any) -> None:
        self.reported.add(id(optimizer))
        where = self._where()
        if where is None:
            return
        name = self._names.get(id(optimizer)) or "optimizer"
        others = [n for key, n in self._names.items() if key != id(optimizer)]
        other_text = f" (clearing the gradients of {', '.join(others)} does not clear these)" if others else ""
        message = (
            f"{name}.step() applies gradients that were never cleared since its previous step{other_text}: backward() "
            f"adds into .grad, so each step uses the sum of every earlier step's gradients; call {name}.zero_grad() "
            "(or zero_grad() on its model) once per step"
        )
        details = {"check": "gradients-never-cleared", "optimizer": name, "steps": UNCLEARED_STEPS}
        self._report(Finding("training-logic", "warning", message, where[0], where[1], details=details))


def _first_with_grad(optimizer: Any) -> Any:
    for group in optimizer.param_groups:
        for param in group["params"]:
            if getattr(param, "grad", None) is not None:
                return param
    return None
