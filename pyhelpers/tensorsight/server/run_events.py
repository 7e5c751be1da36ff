"""The ``tensorsight/runEvent`` notifications: the agents' events for the extension's training panel, in batches.

``server`` hands every forwarded event here. One notification per event let a busy (or hostile) process flood the
editor and delay every LSP answer behind them, so each session's events go out at most ``FLUSHES_PER_SECOND`` times
a second, as ``{sessionId, events: [...]}`` (at most ``MAX_BATCH`` events and ``protocol.MAX_RUN_EVENT_BATCH_BYTES``
of JSON each); an event arriving after a quiet spell goes out at once. At most ``MAX_QUEUED`` events
(``MAX_QUEUED_BYTES``) wait per session: past that, routine events (scalars, phases, ...) are dropped and counted,
and the next batch says how many in a server ``dropped`` event; findings and the like are kept up to twice that, and
a process's hello and bye (what the panel's run list follows) up to three times: each type's ``priority`` in
``core.protocol`` says which.

Size: an event whose JSON is longer than ``protocol.MAX_FORWARDED_EVENT_BYTES`` (a process may send lines up to
``MAX_LINE_BYTES``, 1 MiB) is never forwarded: it is counted in that ``dropped`` event (``count`` and ``oversize``)
and the first one per session is logged, so a run of megabyte events reaches the editor as a few bytes of counts.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tensorsight.core import protocol
from tensorsight.server.hub import printable

FLUSHES_PER_SECOND = 4
MAX_BATCH = 500
MAX_QUEUED = 2000
MAX_EVENT_BYTES = protocol.MAX_FORWARDED_EVENT_BYTES
MAX_BATCH_BYTES = protocol.MAX_RUN_EVENT_BATCH_BYTES
MAX_QUEUED_BYTES = 8 * MAX_BATCH_BYTES
# how long each type holds on a full queue: the contract's ``priority`` of each run event (no list of names here)
_TIMES = {protocol.ROUTINE: 1, protocol.KEPT: 2, protocol.LIFECYCLE: 3}

Send = Callable[[str, list[dict[str, Any]]], None]
Log = Callable[[str, str], None]  # (level, message)


@dataclass
class _Queue:
    events: list[dict[str, Any]] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)  # bytes of each queued event's JSON
    queued_bytes: int = 0
    dropped: int = 0  # since the last marker, oversize ones included
    oversize: int = 0  # since the last marker
    oversize_total: int = 0
    last_flush: float = float("-inf")
    handle: asyncio.TimerHandle | None = None


def event_bytes(event: dict[str, Any]) -> int:
    """Bytes of ``event``'s JSON as it will be sent (compact; non-ASCII escaped, as pygls writes it)."""
    try:
        return len(json.dumps(event, separators=(",", ":"), default=str))
    except (TypeError, ValueError, RecursionError):
        return MAX_EVENT_BYTES + 1  # what cannot be measured is not forwarded


class RunEventBatcher:
    """Per-session queues flushed on the running event loop; ``send(session_id, events)`` does the notifying."""

    def __init__(self, send: Send, clock: Callable[[], float] = time.monotonic, log: Log | None = None) -> None:
        self._send = send
        self._clock = clock
        self._log = log or (lambda level, message: None)
        self._queues: dict[str, _Queue] = {}

    def add(self, session_id: str, event: dict[str, Any]) -> None:
        queue = self._queues.setdefault(session_id, _Queue())
        kind = event.get("type")
        times = _TIMES[protocol.event_priority(kind)]
        size = event_bytes(event)
        if size > MAX_EVENT_BYTES:
            queue.dropped += 1
            queue.oversize += 1
            queue.oversize_total += 1
            if queue.oversize_total == 1:
                self._log(
                    "warning",
                    f"hub: a {printable(kind)} event of {size} bytes from pid {printable(event.get('pid'))} was not "
                    f"forwarded to the editor (at most {MAX_EVENT_BYTES} bytes each); such events are counted",
                )
        elif len(queue.events) >= times * MAX_QUEUED or queue.queued_bytes + size > times * MAX_QUEUED_BYTES:
            queue.dropped += 1
        else:
            queue.events.append(event)
            queue.sizes.append(size)
            queue.queued_bytes += size
        if queue.handle is None:
            delay = max(0.0, queue.last_flush + 1.0 / FLUSHES_PER_SECOND - self._clock())
            queue.handle = asyncio.get_running_loop().call_later(delay, self._flush, session_id)

    def oversize(self, session_id: str) -> int:
        """Events of the session not forwarded for their size, so far."""
        queue = self._queues.get(session_id)
        return queue.oversize_total if queue is not None else 0

    def forget(self, session_id: str) -> None:
        """Send what a session still has (it ended) and drop its queue."""
        queue = self._queues.get(session_id)
        if queue is None:
            return
        if queue.handle is not None:
            queue.handle.cancel()
        while queue.events or queue.dropped:
            self._send_batch(session_id, queue)
        del self._queues[session_id]

    def _flush(self, session_id: str) -> None:
        queue = self._queues.get(session_id)
        if queue is None:
            return
        queue.handle = None
        self._send_batch(session_id, queue)
        if queue.events or queue.dropped:
            queue.handle = asyncio.get_running_loop().call_later(1.0 / FLUSHES_PER_SECOND, self._flush, session_id)

    def _send_batch(self, session_id: str, queue: _Queue) -> None:
        count, total = 0, 0
        while count < min(MAX_BATCH, len(queue.events)):
            size = queue.sizes[count]
            if count and total + size > MAX_BATCH_BYTES - 256:  # room for the marker; one event always goes
                break
            total += size
            count += 1
        batch, queue.events = queue.events[:count], queue.events[count:]
        queue.sizes = queue.sizes[count:]
        queue.queued_bytes -= total
        if queue.dropped and len(batch) < MAX_BATCH and (not queue.events or total + 256 <= MAX_BATCH_BYTES):
            marker = protocol.DroppedEvent(
                count=queue.dropped,
                origin="server",
                time=time.time(),
                oversize=queue.oversize or None,
                maxEventBytes=MAX_EVENT_BYTES if queue.oversize else None,
            )
            batch.append(protocol.wire_event(marker))
            queue.dropped = queue.oversize = 0
        queue.last_flush = self._clock()
        if batch:
            self._send(session_id, batch)
