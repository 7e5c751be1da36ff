"""The in-process event bus (``agent.runtime.events``): listeners of some event types get those only, and an event
no listener takes is never built into its wire form (the doctor pays nothing for a step's scalars)."""

from __future__ import annotations

from typing import Any

import pytest

from tensorsight.agent.runtime import events
from tensorsight.core import protocol


@pytest.fixture
def isolated_bus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(events, "_listeners", [])


def test_a_listener_of_some_types_gets_those_and_one_of_every_type_gets_all(isolated_bus: None) -> None:
    findings: list[dict[str, Any]] = []
    everything: list[dict[str, Any]] = []
    stop = events.subscribe(findings.append, ("finding",))
    events.subscribe(everything.append)
    events.send(protocol.ScalarsEvent(step=1, split="train", values={"loss": 1.0}))
    events.send(protocol.FindingEvent(finding={"kind": "memory"}))
    assert [e["type"] for e in findings] == ["finding"]
    assert [e["type"] for e in everything] == ["scalars", "finding"]
    stop()
    events.send(protocol.FindingEvent(finding={"kind": "memory"}))
    assert len(findings) == 1 and len(everything) == 3


def test_an_event_no_listener_takes_is_not_built(isolated_bus: None, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[Any] = []
    real = protocol.to_wire
    monkeypatch.setattr(protocol, "to_wire", lambda event: built.append(event) or real(event))
    events.subscribe(lambda event: None, ("finding", "run-finished"))
    assert not events.wanted("scalars") and events.wanted("finding")
    events.send(protocol.ScalarsEvent(step=1, split="train", values={"loss": 1.0}))
    assert built == []
    events.send(protocol.RunFinishedEvent(error=None))
    assert len(built) == 1
