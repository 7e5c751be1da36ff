"""The training step counter every feature shares: one step is one ``optimizer.step()``, or one parameter update
written by hand after ``backward()``.

Armed after torch is imported, through torch's global optimizer step hooks (no patching). A hand-written update
(``p.data.add_(p.grad, alpha=-lr)``) has no hook: the phase clock notices it (the parameters changed between a
``backward()`` and the next training forward with no optimizer step in between) and reports it through
``hand_written_step``, with a ``HandWrittenUpdate`` standing for the optimizer. Findings, stops and scalars all carry
this step number so they line up in the editor, the log and TensorBoard.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from tensorsight.agent.runtime.guard import never_raise, report_once
from tensorsight.agent.runtime.lazy_import import when_imported
from tensorsight.agent.runtime.untraced_hooks import untraced_hook

StepListener = Callable[[int, Any], None]

_step = 0
_per_optimizer: dict[int, int] = {}
_listeners: list[StepListener] = []
_armed = False


class HandWrittenUpdate:
    """What step listeners receive as "the optimizer" of a hand-written update: the parameters it changed, in one
    param group with no learning rate (the agent cannot know it without reading user variables)."""

    def __init__(self) -> None:
        self.param_groups: list[dict[str, Any]] = [{"params": []}]

    def set_parameters(self, params: list[Any]) -> None:
        self.param_groups[0]["params"] = params

    def __repr__(self) -> str:
        return "<hand-written parameter update>"


def hand_written_step(update: HandWrittenUpdate) -> None:
    """Count one hand-written update as a step and tell the step listeners, as ``optimizer.step()`` would."""
    _after_step(update, (), {})


def current_step() -> int:
    """Number of completed optimizer steps (the maximum over optimizers, so two optimizers don't double count)."""
    return _step


def step_count(optimizer: Any) -> int | None:
    """How many times ``optimizer.step()`` has run since the agent armed; None for an optimizer never stepped.

    Works for optimizers that keep no per-parameter ``step`` state (plain SGD without momentum).
    """
    return _per_optimizer.get(id(optimizer))


def add_step_listener(listener: StepListener) -> None:
    """Call ``listener(step, optimizer)`` after every ``optimizer.step()`` (arms the hook on first use)."""
    if listener not in _listeners:
        _listeners.append(listener)
    arm()


def remove_step_listener(listener: StepListener) -> None:
    """Stop calling ``listener``; unknown listeners are ignored."""
    if listener in _listeners:
        _listeners.remove(listener)


@untraced_hook
@never_raise()
def _after_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    global _step
    key = id(optimizer)
    _per_optimizer[key] = _per_optimizer.get(key, 0) + 1
    _step = max(_step, _per_optimizer[key])
    for listener in list(_listeners):
        try:
            listener(_step, optimizer)
        except Exception as exc:  # noqa: BLE001
            report_once(f"step-listener-{id(listener)}", f"step listener failed: {exc!r}")


def _install(torch: ModuleType) -> None:
    from torch.optim.optimizer import register_optimizer_step_post_hook

    register_optimizer_step_post_hook(_after_step)


def arm(origin: str = "debugger") -> None:
    global _armed
    if _armed:
        return
    _armed = True
    when_imported("torch", _install)
