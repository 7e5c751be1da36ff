"""How far each of an optimizer's first updates moved its parameters, relative to their size: ``‖θ after − θ before‖
/ ‖θ before‖`` over the first ``EARLY_STEPS`` steps. Stable training moves the weights by a fraction of a percent per
step; a learning rate far too high moves them by tens of percent from the very first steps (and may leave the model
stuck, ReLUs dead, with a loss that then looks calm). ``core.curves.diagnose_overshoot`` reads the ratios.

Armed by ``agent.measurement.pipeline`` (``before`` from its before-step listener, ``after`` from its step listener).
Good guest: a bounded sample of the parameters is cloned under ``torch.no_grad()`` with torch-function modes
disabled (no graph, no ``_version`` bump, no RNG, no write into the program's tensors), only at the first steps.
"""

from __future__ import annotations

import math
from typing import Any

from tensorsight.agent.runtime.guard import never_raise

EARLY_STEPS = 10  # first steps of each optimizer whose update size is measured
MAX_ELEMENTS = 2_000_000  # parameter elements cloned per step at most (the first parameters, in order)


class UpdateSizes:
    """Relative update sizes of each optimizer's first steps (``ratios[id(optimizer)]``)."""

    def __init__(self, torch: Any) -> None:
        self._torch = torch
        self.ratios: dict[int, list[float]] = {}
        self._before: dict[int, list[tuple[Any, Any]]] = {}  # optimizer -> (parameter, its clone before the step)

    @never_raise()
    def before(self, optimizer: Any) -> None:
        key = id(optimizer)
        if len(self.ratios.get(key, ())) >= EARLY_STEPS:
            return
        torch = self._torch
        taken: list[tuple[Any, Any]] = []
        budget = MAX_ELEMENTS
        with torch._C.DisableTorchFunction(), torch.no_grad():
            for group in getattr(optimizer, "param_groups", ()):
                for param in group.get("params", ()):
                    if not isinstance(param, torch.Tensor) or not param.requires_grad or param.grad is None:
                        continue
                    if not param.is_floating_point() or param.numel() > budget:
                        continue
                    budget -= param.numel()
                    taken.append((param, param.detach().clone()))
        if taken:
            self._before[key] = taken
        else:
            self._before.pop(key, None)

    @never_raise()
    def after(self, optimizer: Any) -> None:
        taken = self._before.pop(id(optimizer), None)
        if not taken:
            return
        torch = self._torch
        moved = size = 0.0
        with torch._C.DisableTorchFunction(), torch.no_grad():
            for param, old in taken:
                if param.shape != old.shape:
                    return
                old64 = old.double()
                moved += float((param.detach().double() - old64).pow(2).sum())
                size += float(old64.pow(2).sum())
        if size > 0 and math.isfinite(moved) and math.isfinite(size):
            self.ratios.setdefault(id(optimizer), []).append(math.sqrt(moved / size))
