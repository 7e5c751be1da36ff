"""Run-time evidence that a training loss scores the rows an evaluation holds out: a full-batch model (a GCN on one
graph, a tabular model fitted on one tensor) whose training loss reads every row of its targets while the evaluation
picks its rows with a mask or an index (``out[val_mask]``, ``labels[val_mask]``).

Armed by ``measurement.pipeline`` beside ``data_checks``, on the same listener: the outermost functional loss calls
(``EvaluationWatch.loss_call_listeners``). A training loss call (``PhaseClock.scores_training``) leaves a weak
reference to its target; an evaluation loss call whose target has fewer rows than that one looks, in the frames of the
user code that called it, for what selected them: a boolean mask as long as the training target with as many True
values as the evaluation has rows, or an integer index with as many entries. When the training target, so selected,
is the evaluation target value for value, the rows scored in evaluation were scored in training too: a ``leakage``
error at the training loss call, naming the selector as the program calls it (its outermost name: ``val_mask`` in
``main()`` rather than ``mask`` in ``evaluate()``).

A program that trains on its training rows (``labels[train_mask]``) never has a training target longer than the mask's
selection that equals the evaluation's; mini-batch programs train and evaluate on batches of other rows. Bounded: the
first ``MAX_EVALUATIONS`` evaluation calls with a longer training target are looked at, ``MAX_FRAMES`` user frames and
``MAX_CANDIDATES`` selectors each; every read is of detached tensors under ``torch.no_grad()`` (new tensors, no write,
no graph). Nothing else is kept: a weak reference to one target and the line of the loss that scored it.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from types import FrameType, ModuleType
from typing import Any

from tensorsight.agent.measurement.phases import caller_location
from tensorsight.agent.runtime.guard import never_raise
from tensorsight.agent.runtime.user_code import user_frame, user_frames
from tensorsight.core.findings import Finding, place_text
from tensorsight.core.l10n import t

Location = tuple[str, int]

MIN_ROWS = 8  # evaluation rows below this prove nothing
MAX_EVALUATIONS = 8  # evaluation loss calls looked at (each with a longer training target)
MAX_FRAMES = 8  # user frames searched for the selector, innermost first
MAX_CANDIDATES = 16  # selectors compared per evaluation call
MAX_LOCALS = 256  # variables of one frame looked at


class HeldOutRowsWatch:
    """The check of the module docstring; one per process."""

    def __init__(self, torch: ModuleType, clock: Any, evaluation: Any, emit: Callable[[Finding], None]) -> None:
        self._torch = torch
        self._clock = clock
        self._evaluation = evaluation
        self._emit = emit
        self._target: weakref.ReferenceType[Any] | None = None  # the last training loss's target
        self._trained_at: Location | None = None  # where the training loss with the longest target was called
        self._longest = 0
        self._looked = 0
        self._done = False

    def install(self) -> None:
        self._evaluation.loss_call_listeners.append(self._on_loss_call)

    def uninstall(self) -> None:
        if self._on_loss_call in self._evaluation.loss_call_listeners:
            self._evaluation.loss_call_listeners.remove(self._on_loss_call)

    @never_raise()
    def _on_loss_call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        if self._done:
            return
        target = args[1] if len(args) > 1 else kwargs.get("target")
        if not isinstance(target, self._torch.Tensor) or target.dim() == 0:
            return
        rows = int(target.shape[0])
        if self._clock.scores_training():
            self._target = weakref.ref(target)
            if rows > self._longest:  # the line is read (a frame walk) only when the target grows
                self._longest = rows
                self._trained_at = caller_location(sys._getframe(1))
            return
        trained = self._target() if self._target is not None else None
        if trained is None or rows < MIN_ROWS or int(trained.shape[0]) <= rows or self._trained_at is None:
            return
        if trained.shape[1:] != target.shape[1:] or trained.dtype != target.dtype or trained.device != target.device:
            return
        self._looked += 1
        self._done = self._looked >= MAX_EVALUATIONS
        frame = user_frame(sys._getframe(1))
        found = self._selector(frame, trained, target)
        if found is not None:
            self._done = True
            self._emit(self._finding(self._trained_at, found, trained, rows, caller_location(sys._getframe(1))))

    def _selector(self, frame: FrameType | None, trained: Any, target: Any) -> str | None:
        """The name of a mask or index in the user's frames that picks ``target`` out of ``trained``."""
        torch = self._torch
        total, rows = int(trained.shape[0]), int(target.shape[0])
        compared = 0
        with torch.no_grad():
            for user in user_frames(frame, MAX_FRAMES):
                for name, value in list(user.f_locals.items())[:MAX_LOCALS]:
                    if not _selects(torch, value, total, rows):
                        continue
                    if value.device == trained.device and torch.equal(trained.detach()[value], target.detach()):
                        return _outermost_name(user, value, name)
                    compared += 1
                    if compared >= MAX_CANDIDATES:
                        return None
        return None

    @staticmethod
    def _finding(at: Location, name: str, trained: Any, held: int, evaluated: Location | None) -> Finding:
        message = t(
            "the training loss scores all {rows} rows of its targets, the {held} rows that `{selector}` selects for "
            "evaluation included (the evaluation loss at {evaluated} scores those rows): the model is trained on the "
            "labels it is then evaluated on, so its validation and test figures are too good; select the training "
            "rows in the training loss as well (`output[train_mask]`, `target[train_mask]`)",
            rows=int(trained.shape[0]),
            held=held,
            selector=name,
            evaluated=place_text(evaluated[0], evaluated[1], at[0]) if evaluated is not None else "?",
        )
        details: dict[str, Any] = {
            "check": "held-out-rows-trained",
            "rows": int(trained.shape[0]),
            "held_out_rows": held,
            "selector": name,
        }
        if evaluated is not None:
            details["evaluation"] = {"file": evaluated[0], "line": evaluated[1]}
        return Finding("leakage", "error", message, *at, details=details)


def _selects(torch: ModuleType, value: Any, total: int, rows: int) -> bool:
    """Whether ``value`` can pick ``rows`` rows out of ``total``: a 1-D boolean mask of ``total`` with ``rows`` True,
    or a 1-D integer index of ``rows`` entries, all below ``total``."""
    if type(value) is not torch.Tensor or value.dim() != 1:
        return False
    if value.dtype == torch.bool:
        return int(value.shape[0]) == total and int(value.sum()) == rows
    if value.is_floating_point() or value.is_complex() or int(value.shape[0]) != rows:
        return False
    return bool((value >= 0).all()) and int(value.max()) < total


def _outermost_name(frame: FrameType, value: Any, name: str) -> str:
    """The name the outermost user frame gives ``value`` (``val_mask`` in ``main()`` for ``mask`` in ``evaluate()``)."""
    for outer in user_frames(frame.f_back):
        name = next((other for other, held in list(outer.f_locals.items())[:MAX_LOCALS] if held is value), name)
    return name
