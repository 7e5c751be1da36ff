"""``run_events.RunEventBatcher``: an event after a quiet spell goes out at once, a burst goes out in batches at most
``FLUSHES_PER_SECOND`` a second, and past the queue's bound routine events are dropped and counted while a run's
hello and bye are kept."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from tensorsight.server import run_events
from tensorsight.server.run_events import MAX_BATCH, MAX_QUEUED, RunEventBatcher

pytestmark = pytest.mark.asyncio(loop_scope="function")


async def test_a_burst_is_batched_bounded_and_counted():
    sent: list[tuple[float, list[dict]]] = []
    loop = asyncio.get_running_loop()
    batcher = RunEventBatcher(lambda session, events: sent.append((loop.time(), events)))
    batcher.add("s", {"type": "hello", "pid": 1})
    await asyncio.sleep(0.01)
    assert [e["type"] for _, batch in sent for e in batch] == ["hello"]  # at once after a quiet spell
    for step in range(3 * MAX_QUEUED):
        batcher.add("s", {"type": "scalars", "step": step})
    batcher.add("s", {"type": "bye", "pid": 1})
    deadline = loop.time() + 30
    while not any(e["type"] == "bye" for _, batch in sent for e in batch) and loop.time() < deadline:
        await asyncio.sleep(0.05)
    events = [e for _, batch in sent for e in batch]
    assert len(events) == 1 + MAX_QUEUED + 1 + 1  # hello, the queued scalars, the bye, one dropped marker
    (dropped,) = [e for e in events if e["type"] == "dropped"]
    assert dropped["count"] == 2 * MAX_QUEUED and dropped["origin"] == "server"
    assert all(len(batch) <= MAX_BATCH for _, batch in sent)
    gaps = [later - earlier for (earlier, _), (later, _) in itertools.pairwise(sent)]
    assert min(gaps) >= 1.0 / run_events.FLUSHES_PER_SECOND * 0.9


async def test_an_ended_session_sends_what_it_still_had():
    sent: list[list[dict]] = []
    batcher = RunEventBatcher(lambda session, events: sent.append(events))
    batcher.add("s", {"type": "hello"})
    batcher.add("s", {"type": "scalars"})
    batcher.forget("s")
    assert [e["type"] for batch in sent for e in batch] == ["hello", "scalars"]
    await asyncio.sleep(0.3)
    assert len([e for batch in sent for e in batch]) == 2  # nothing more after forget
