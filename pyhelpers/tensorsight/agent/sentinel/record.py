"""The record of one NaN/Inf birth (Variables' ``(nonfinite)`` entry, ``last_nonfinite()``): plain data, no
behaviour beyond how it lists itself. ``sentinel.records`` builds and publishes it; ``sentinel.state`` keeps the last
one and the one waiting for ``backward()`` to return."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tensorsight.core import protocol
from tensorsight.core.findings import Finding


@dataclass(eq=False)
class NonFiniteRecord:
    """One NaN/Inf birth: where, in which phase and step, and the values involved (shown in Variables)."""

    phase: str
    op: str
    title: str
    message: str  # the stop's reason and the console line: what, phase, step, rank and place in one sentence
    summary: str  # the finding's text: what and phase only (its file, line, step and rank are the finding's fields)
    file: str | None
    line: int | None
    step: int
    rank: int | None
    nan: int
    posinf: int
    neginf: int
    elements: int
    module: str | None = None
    node: str | None = None
    inputs: tuple[Any, ...] = ()
    output: Any = None
    incoming_grads: tuple[Any, ...] = ()
    produced_grads: tuple[Any, ...] = ()
    stopped_at: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"<{self.title}: {self.message}>"

    def __tensorsight_rows__(self) -> list[tuple[str, Any]]:
        """What its Variables entry lists (the agent's presentation): the facts, then the tensors involved."""
        rows: list[tuple[str, Any]] = [
            (name, getattr(self, name))
            for name in ("title", "message", "phase", "op", "module", "node", "file", "line", "step", "rank")
            if getattr(self, name) is not None
        ]
        rows += [("nan", self.nan), ("posinf", self.posinf), ("neginf", self.neginf), ("elements", self.elements)]
        rows += [(name, getattr(self, name)) for name in ("inputs", "output", "incoming_grads", "produced_grads")]
        return rows + [
            (name, value) for name, value in (("stopped_at", self.stopped_at), ("details", self.details)) if value
        ]

    def event(self) -> protocol.NonfiniteEvent:
        """The ``nonfinite`` event (design schema plus ``module``/``node``/``rank``/``title`` when known)."""
        return protocol.NonfiniteEvent(
            file=self.file,
            line=self.line,
            op=self.op,
            phase=self.phase,
            step=self.step,
            nan=self.nan,
            posinf=self.posinf,
            neginf=self.neginf,
            message=self.message,
            title=self.title,
            module=self.module,
            node=self.node,
            rank=self.rank,
        )

    def finding(self) -> Finding | None:
        if self.file is None or self.line is None:
            return None
        details: dict[str, Any] = {
            "op": self.op,
            "phase": self.phase,
            "nan": self.nan,
            "posinf": self.posinf,
            "neginf": self.neginf,
            "elements": self.elements,
            **self.details,
        }
        if self.module:
            details["module"] = self.module
        if self.node:
            details["node"] = self.node
        return Finding(
            "nonfinite", "error", f"{self.title}: {self.summary}", self.file, self.line, self.step, self.rank, details
        )
