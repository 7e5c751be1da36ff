"""A watch of ``agent.measurement`` that hangs off the functional-loss relays, installed in the test's own process
with the real phase clock and evaluation watch it needs (``Watched``), and the source line of a ``# @marker``
(``line_of``). Used by the data-check tests (``data_checks``, ``heldout_rows``)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

from tensorsight.agent.measurement.evaluation import EvaluationWatch
from tensorsight.agent.measurement.phases import PhaseClock
from tensorsight.agent.runtime import events


class Watched:
    """``make(torch, clock, evaluation, emit)`` builds the watch under test (``install``/``uninstall``); the findings
    it publishes are kept, as dicts, in ``findings``."""

    def __init__(self, make: Callable[..., Any]) -> None:
        self.clock = PhaseClock(torch)
        self.evaluation = EvaluationWatch(torch, self.clock)
        self.findings: list[dict] = []
        self.watch = make(torch, self.clock, self.evaluation, lambda f: self.findings.append(f.to_dict()))

    def __enter__(self) -> Watched:
        self.clock.install()
        self.evaluation.install()
        self.watch.install()
        self._unsubscribe = events.subscribe(lambda _event: None)
        return self

    def __exit__(self, *exc: object) -> None:
        self._unsubscribe()
        self.watch.uninstall()
        self.evaluation.uninstall()
        self.clock.uninstall()


def line_of(function: Callable[..., Any], marker: str) -> int:
    """The line of ``function``'s source that ends with ``# @marker``."""
    lines, start = inspect.getsourcelines(function)
    (offset,) = [i for i, line in enumerate(lines) if line.rstrip().endswith(f"# @{marker}")]
    return start + offset
