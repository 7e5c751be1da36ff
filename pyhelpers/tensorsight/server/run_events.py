"""The ``tensorsight/runEvent`` notifications: the agents' events for the extension's training panel, in batches.

``server`` hands every forwarded event here. One notification per event let a busy (or hostile) process flood the
editor and delay every LSP answer behind them, so each session's events go out at most ``FLUSHES_PER_SECOND`` times
a second, as ``{sessionId, events: [...]}`` (at most ``MAX_BATCH`` each); an event arriving after a quiet spell goes
out at once. At most ``MAX_QUEUED`` events wait per session: past that, routine events (scalars, phases, ...) are
dropped and counted, and the next batch says how many in a server ``dropped`` event; findings and the like are kept
up to twice that, and a process's hello and bye (what the panel's run list follows) up to three times.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

FLUSHES_PER_SECOND = 4
MAX_BATCH = 500
MAX_QUEUED = 2000
KEPT_TYPES = frozenset({"finding", "nonfinite", "condition-error", "rank-state", "ranks", "tensorboard"})
LIFECYCLE_TYPES = frozenset({"hello", "bye", "run-finished"})

Send = Callable[[str, list[dict[str, Any]]], None]


@dataclass
class _Queue:
    events: list[dict[str, Any]] = field(default_factory=list)
    dropped: int = 0
    last_flush: float = float("-inf")
    handle: asyncio.TimerHandle | None = None


class RunEventBatcher:
    """Per-session queues flushed on the running event loop; ``send(session_id, events)`` does the notifying."""

    def __init__(self, send: Send, clock: Callable[[], float] = time.monotonic) -> None:
        self._send = send
        self._clock = clock
        self._queues: dict[str, _Queue] = {}

    def add(self, session_id: str, event: dict[str, Any]) -> None:
        queue = self._queues.setdefault(session_id, _Queue())
        kind = event.get("type")
        room = 3 * MAX_QUEUED if kind in LIFECYCLE_TYPES else 2 * MAX_QUEUED if kind in KEPT_TYPES else MAX_QUEUED
        if len(queue.events) >= room:
            queue.dropped += 1
        else:
            queue.events.append(event)
        if queue.handle is None:
            delay = max(0.0, queue.last_flush + 1.0 / FLUSHES_PER_SECOND - self._clock())
            queue.handle = asyncio.get_running_loop().call_later(delay, self._flush, session_id)

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
        batch, queue.events = queue.events[:MAX_BATCH], queue.events[MAX_BATCH:]
        if queue.dropped and len(batch) < MAX_BATCH:
            batch.append({"type": "dropped", "count": queue.dropped, "origin": "server", "time": time.time()})
            queue.dropped = 0
        queue.last_flush = self._clock()
        if batch:
            self._send(session_id, batch)
