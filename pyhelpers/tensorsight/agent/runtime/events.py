"""In-process event bus: features publish what they observe; the hub client and the doctor subscribe.

Publishing never blocks and never raises. A feature builds its event as the contract's dataclass
(``core.protocol``, e.g. ``TimerEvent``) and ``send``s it; on the bus an event is a plain JSON-able dict with its
``type``, and the bus adds ``pid``, ``time`` and (under torch.distributed) ``rank``. Every event type, its fields,
the module that sends it and where the server takes it are declared once in ``tensorsight.core.protocol.EVENTS``;
``tests/core/test_protocol.py`` fails when the agent sends a type the contract does not declare, or emits one by
name with loose keys. A Finding goes out through ``emit_finding``; the hub client writes ``hello``, ``dropped`` and
``bye`` on the wire itself."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from tensorsight.agent.runtime import identity
from tensorsight.agent.runtime.guard import never_raise, report_once
from tensorsight.core import protocol
from tensorsight.core.findings import Finding

Listener = Callable[[dict[str, Any]], None]

_listeners: list[tuple[Listener, frozenset[str] | None]] = []  # each with the event types it takes (None: every)


def subscribe(listener: Listener, types: Iterable[str] | None = None) -> Callable[[], None]:
    """Add a listener, of every event or of ``types`` only; returns a function that removes it.

    ``send`` builds an event's wire form only when some listener takes its type: in the doctor, whose listeners take
    findings and the end of the run, a step's scalars, phases and memory figures cost nothing to publish."""
    entry = (listener, None if types is None else frozenset(types))
    _listeners.append(entry)

    def unsubscribe() -> None:
        if entry in _listeners:
            _listeners.remove(entry)

    return unsubscribe


def wanted(event_type: str) -> bool:
    """Whether some listener takes events of ``event_type``."""
    return any(types is None or event_type in types for _, types in _listeners)


@never_raise()
def emit(event_type: str, **data: Any) -> None:
    """Publish one event to every listener; a failing listener is reported once and skipped."""
    event = _stamped(event_type, data)
    for listener, types in list(_listeners):
        if types is not None and event_type not in types:
            continue
        try:
            listener(event)
        except Exception as exc:  # noqa: BLE001
            report_once(f"listener-{id(listener)}", f"event listener failed: {type(exc).__name__}: {exc}")


def _stamped(event_type: str, data: dict[str, Any]) -> dict[str, Any]:
    event: dict[str, Any] = {"type": event_type, "pid": os.getpid(), "time": time.time(), **data}
    rank = identity.rank()
    if rank is not None and "rank" not in event:
        event["rank"] = rank
    return event


def wire_form(event: protocol.AgentEvent) -> dict[str, Any]:
    """The event as a listener receives it (its type, this process, the time, the rank): for one listener that must
    get an event published before it subscribed (the hub an attached editor named)."""
    return _stamped(event.TYPE, protocol.to_wire(event))


def send(event: protocol.AgentEvent) -> None:
    """Publish one event built from its contract dataclass (``core.protocol``): a renamed or mistyped field fails
    type checking instead of reaching the server as an unknown key. Nothing is built when no listener takes it."""
    if wanted(event.TYPE):
        emit(event.TYPE, **protocol.to_wire(event))


def emit_finding(finding: Finding) -> None:
    """Publish a finding (the doctor prints it, the hub turns it into a diagnostic)."""
    data = finding.to_dict()
    if finding.rank is None:
        rank = identity.rank()
        if rank is not None:
            data["rank"] = rank
    send(protocol.FindingEvent(finding=data))
