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
- a step with none of them, twice in a row, is a ``training-logic`` finding. It is placed where the clearing belongs:
  at the ``backward()`` call (the user's line, recorded by ``backward_seen``) when exactly one backward ran since the
  optimizer's previous step, as the static rule TS101 places it; at the step's line otherwise (several backwards
  per step, a closure step).

Deliberate gradient accumulation (a step every N batches, then ``zero_grad()``) clears once per step: no finding.

The same pre-hook sees the opposite bug: an optimizer whose trainable parameters hold no gradient at all, twice in a
row, although ``backward()`` ran since its previous step, steps on nothing: the loss backpropagated for it does not
reach its parameters (a GAN generator whose loss scores ``netD(fake.detach())``). The finding is placed where the
graph is cut when the step's own block shows it (the nearest ``.detach()``/``.item()``/``no_grad`` above the
``backward()`` that precedes the step, below the previous optimizer step), else at the step. A closure step
(LBFGS, Lightning) computes its gradients inside ``step()``: not judged. Frozen parameters (``requires_grad=False``)
are not counted.

Read-only: ``_version``, object identity and weak references; no tensor is touched.
"""

from __future__ import annotations

import linecache
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tensorsight.agent.runtime.guard import never_raise
from tensorsight.agent.runtime.patches import Patches
from tensorsight.agent.runtime.transforming import skip_frames
from tensorsight.agent.runtime.untraced_hooks import untraced_hook
from tensorsight.core.findings import Finding, place_text
from tensorsight.core.l10n import t

UNCLEARED_STEPS = 2  # consecutive steps on uncleared gradients before the finding (one could be a warm-up trick)
GRADLESS_STEPS = 2  # consecutive steps with no gradient on any trainable parameter (after a backward)
CUT_SCAN_LINES = 40  # how far above a step the graph cut is looked for
_GRAPH_CUTS = (".detach()", ".item()", "no_grad()", ".numpy()", ".data")


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
        self._last_backward: tuple[str, int] | None = None  # the user line of the latest backward() call
        self._placing = False  # a probe is one uncleared step from its finding: the next backward's line is read
        self._names: dict[int, str] = {}
        self.reported: set[int] = set()  # ids of the optimizers found stepping on uncleared gradients
        self._gradless: dict[int, tuple[int, int]] = {}  # optimizer id -> (steps in a row with no gradient, backwards)
        self._gradless_reported: set[int] = set()
        self._patches = Patches("gradient_clearing")

    # ---------------------------------------------------------------------------------------------- installation
    def install(self) -> None:
        torch = self._torch
        self._wrap(torch.optim.Optimizer, "zero_grad", self._optimizer_cleared)
        self._wrap(torch.nn.Module, "zero_grad", self._module_cleared)
        import torch.nn.utils.clip_grad as clip_grad

        for name in ("clip_grad_norm_", "clip_grad_value_"):  # torch.nn.utils re-exports both: one wrapper each
            self._wrap((clip_grad, torch.nn.utils), name, self._clipped)

    def uninstall(self) -> None:
        self._patches.restore()

    def _wrap(self, owners: Any, name: str, after: Callable[[Any], None]) -> None:
        after = untraced_hook(after)  # ours, untraced by the debugger; ``original`` is the program's call

        def make(original: Callable[..., Any]) -> Callable[..., Any]:
            def observing(*args: Any, **kwargs: Any) -> Any:
                result = original(*args, **kwargs)
                after(args[0] if args else None)
                return result

            skip_frames(observing.__code__, calls_too=False)  # the program's call inside is Dynamo's to compile
            return observing

        self._patches.replace(owners, name, make)

    @never_raise()
    def backward_seen(self, _tensors: Any) -> None:
        """A backward() returned (a ``PhaseClock.backward_listeners`` entry): remember the user line that called it,
        only while a finding may need it (a frame walk per backward otherwise)."""
        if self._placing:
            self._last_backward = self._where()

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
    def before_step(self, optimizer: Any, name: str | None = None, closure: bool = False) -> None:
        """In the optimizer's step pre-hook: judge the gradients it is about to apply, then re-arm its probe."""
        if name:
            self._names[id(optimizer)] = name
        backwards = self._backwards()
        probe = self._probes.get(id(optimizer))
        param = probe.param() if probe is not None else None
        if param is None or getattr(param, "grad", None) is None:
            param = _first_with_grad(optimizer)
            if param is None:
                if not closure:
                    self._no_gradient(optimizer, backwards)
                return
        self._gradless.pop(id(optimizer), None)
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
                lone = backwards - probe.backwards == 1 and not closure
                self._found(optimizer, self._last_backward if lone else None)
        else:
            probe = _Probe(weakref.ref(param), None, 0, backwards)
            self._probes[id(optimizer)] = probe
            weakref.finalize(optimizer, self._probes.pop, id(optimizer), None)
        probe.grad = weakref.ref(grad)
        probe.version = grad._version
        probe.backwards = backwards
        probe.clippings = self._clippings
        probe.cleared = False
        self._placing = any(p.uncleared_steps == UNCLEARED_STEPS - 1 and not p.reported for p in self._probes.values())
        self._last_backward = None

    def _found(self, optimizer: Any, backward: tuple[str, int] | None) -> None:
        """Report ``optimizer`` stepping on uncleared gradients: at ``backward`` (the one backward() call its steps
        apply) when given, else at the step."""
        self.reported.add(id(optimizer))
        where = self._where()
        if where is None:
            return
        name = self._names.get(id(optimizer)) or "optimizer"
        others = [n for key, n in self._names.items() if key != id(optimizer)]
        other_text = t(" (clearing the gradients of {0} does not clear these)", ", ".join(others)) if others else ""
        details: dict[str, Any] = {"check": "gradients-never-cleared", "optimizer": name, "steps": UNCLEARED_STEPS}
        if backward is not None:
            at = backward
            details["step_file"], details["step_line"] = where
            step_where = place_text(where[0], where[1], at[0])
            message = t(
                "backward() adds into .grad, and nothing cleared the gradients since {name}'s previous step{others}: "
                "each {name}.step() ({step}) applies the sum of every earlier step's gradients; call "
                "{name}.zero_grad() (or zero_grad() on its model) right before backward()",
                name=name,
                others=other_text,
                step=step_where,
            )
        else:
            at = where
            message = t(
                "{name}.step() applies gradients that were never cleared since its previous step{others}: "
                "backward() adds into .grad, so each step uses the sum of every earlier step's gradients; call "
                "{name}.zero_grad() (or zero_grad() on its model) once per step",
                name=name,
                others=other_text,
            )
        self._report(Finding("training-logic", "warning", message, at[0], at[1], details=details))

    def _no_gradient(self, optimizer: Any, backwards: int) -> None:
        """A step on which no trainable parameter of ``optimizer`` holds a gradient (see the module docstring)."""
        key = id(optimizer)
        if key in self._gradless_reported or not _has_trainable(optimizer):
            return
        count, seen = self._gradless.get(key, (0, -1))
        if seen >= 0 and backwards <= seen:
            return  # no backward since its previous step: nothing was meant to reach it
        count += 1 if seen >= 0 else 0
        self._gradless[key] = (count, backwards)
        if count < GRADLESS_STEPS - 1:
            return
        self._gradless_reported.add(key)
        where = self._where()
        if where is None:
            return
        name = self._names.get(key) or "optimizer"
        cut = graph_cut_above(where[0], where[1])
        at = cut if cut is not None else where
        because = t(": the graph is cut here (`{0}`)", linecache.getline(*cut).strip()) if cut is not None else ""
        message = t(
            "{name}.step() has nothing to apply: none of its parameters received a gradient from the backward() "
            "calls since its previous step, so they never learn{because}. The loss backpropagated for {name} must be "
            "computed from its model's output without .detach(), .item(), torch.no_grad() or a numpy round-trip",
            name=name,
            because=because,
        )
        details = {"check": "no-gradient", "optimizer": name, "steps": GRADLESS_STEPS, "step_line": where[1]}
        self._report(Finding("training-logic", "warning", message, at[0], at[1], details=details))


def graph_cut_line(text: str) -> bool:
    """Whether a source line cuts the autograd graph (``.detach()``, ``.item()``, ``no_grad()``, ``.numpy()``)."""
    code = text.split("#", 1)[0]
    return any(cut in code for cut in _GRAPH_CUTS)


def graph_cut_above(file: str, line: int) -> tuple[str, int] | None:
    """The nearest line above ``line`` in its block that cuts the graph, stopping at the previous optimizer step or
    at the start of the enclosing function (read with linecache: no import, no execution)."""
    step_indent = _indent(linecache.getline(file, line))
    past_backward = False  # only what runs before the backward() can cut the graph it walks
    for number in range(line - 1, max(0, line - CUT_SCAN_LINES), -1):
        text = linecache.getline(file, number)
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if _indent(text) < step_indent and stripped.startswith(("def ", "async def ", "class ")):
            return None
        if ".step(" in stripped:
            return None
        if ".backward(" in stripped:
            past_backward = True
        elif past_backward and graph_cut_line(stripped):
            return file, number
    return None


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _has_trainable(optimizer: Any) -> bool:
    return any(getattr(p, "requires_grad", False) for group in optimizer.param_groups for p in group["params"])


def _first_with_grad(optimizer: Any) -> Any:
    for group in optimizer.param_groups:
        for param in group["params"]:
            if getattr(param, "grad", None) is not None:
                return param
    return None
