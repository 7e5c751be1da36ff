"""What the hub of the real language server forwards to the editor is bounded in bytes: an event larger than
``protocol.MAX_FORWARDED_EVENT_BYTES`` (an agent may send lines up to ``MAX_LINE_BYTES``) is not forwarded but counted
in a server ``dropped`` event and logged once, and each ``tensorsight/runEvent`` notification carries at most
``MAX_RUN_EVENT_BATCH_BYTES`` of events, while ordinary events still arrive and LSP requests stay fast.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from support.lsp import eventually, initialize, server_config
from tensorsight.core import protocol

pytestmark = pytest.mark.asyncio(loop_scope="module")

LATENCY_LIMIT = 1.0


@pytest_lsp.fixture(config=server_config(), scope="module")
async def client(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def agent(client: LanguageClient, session_id: str) -> asyncio.StreamWriter:
    """A connection to the session's hub that has said its hello, as ``hub_client`` does."""
    session = await client.protocol.send_request_async("tensorsight/startSession", {"sessionId": session_id})
    host, port = session.address.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    hello = {"type": "hello", "protocol": 1, "token": session.token, "pid": 4242, "time": time.time(),
             "script": "/tmp/train.py", "argv": [], "origin": "debugger"}  # fmt: skip
    writer.write((json.dumps(hello) + "\n").encode())
    await writer.drain()
    assert json.loads(await asyncio.wait_for(reader.readline(), 30))["type"] == "welcome"
    return writer


def scalars(step: int, padding: int) -> bytes:
    event = {"type": "scalars", "pid": 4242, "time": time.time(), "step": step, "split": "train",
             "values": {"loss": 1.0 / (step + 1)}, "note": "x" * padding}  # fmt: skip
    return (json.dumps(event) + "\n").encode()


def batches_of(client: LanguageClient, session_id: str) -> list[dict[str, Any]]:
    return [b for b in client.run_event_batches if b["sessionId"] == session_id]  # type: ignore[attr-defined]


def notification_bytes(batch: dict[str, Any]) -> int:
    return len(json.dumps(batch, separators=(",", ":")))


async def suggest_latency(client: LanguageClient) -> float:
    began = time.perf_counter()
    await asyncio.wait_for(client.protocol.send_request_async("tensorsight/suggestConditions", {"name": "loss"}), 30)
    return time.perf_counter() - began


@pytest.mark.timing  # bounds a wall time: scripts/test.sh runs it with nothing beside it
@pytest.mark.timeout(180)
async def test_megabyte_events_are_counted_not_forwarded(client: LanguageClient):
    writer = await agent(client, "huge")
    big = protocol.MAX_LINE_BYTES - 4096  # just under what the hub accepts as one line
    latencies = []
    for step in range(100):
        writer.write(scalars(step, big))
        if step % 10 == 0:
            writer.write(scalars(1000 + step, 10))  # ordinary events in between still arrive
            await writer.drain()
            latencies.append(await suggest_latency(client))
    writer.write((json.dumps({"type": "bye", "pid": 4242, "time": time.time(), "dropped": 0}) + "\n").encode())
    await writer.drain()

    def events() -> list[dict[str, Any]]:
        return [e for b in batches_of(client, "huge") for e in b["events"]]

    await eventually(lambda: any(e["type"] == "bye" for e in events()), what="the bye")
    await eventually(lambda: sum(e.get("oversize", 0) for e in events() if e["type"] == "dropped") >= 100, 10)
    writer.close()
    sent = sum(notification_bytes(b) for b in batches_of(client, "huge"))
    assert sent < 256 << 10, f"{sent / (1 << 20):.1f} MB of runEvent notifications for 100 oversize events"
    markers = [e for e in events() if e["type"] == "dropped" and e.get("origin") == "server"]
    assert sum(m["oversize"] for m in markers) == 100 and sum(m["count"] for m in markers) >= 100
    assert all(m["maxEventBytes"] == protocol.MAX_FORWARDED_EVENT_BYTES for m in markers)
    assert sorted(e["step"] for e in events() if e["type"] == "scalars") == [1000 + s for s in range(0, 100, 10)]
    assert len([m for m in client.log_messages if "was not forwarded to the editor" in m.message]) == 1
    assert max(latencies) < LATENCY_LIMIT, f"an LSP request took {max(latencies):.2f} s"


@pytest.mark.timeout(180)
async def test_each_notification_is_bounded_in_bytes(client: LanguageClient):
    writer = await agent(client, "wide")
    size = protocol.MAX_FORWARDED_EVENT_BYTES - 1024  # each event may be forwarded; 200 of them are 12 MiB
    for step in range(200):
        writer.write(scalars(step, size))
    await writer.drain()

    def events() -> list[dict[str, Any]]:
        return [e for b in batches_of(client, "wide") for e in b["events"]]

    def accounted() -> int:  # forwarded, or counted as dropped (a burst beyond what the queue holds)
        return sum(1 if e["type"] == "scalars" else e["count"] if e["type"] == "dropped" else 0 for e in events())

    await eventually(lambda: accounted() == 200, what="the 200 events, forwarded or counted")
    writer.close()
    sizes = [notification_bytes(b) for b in batches_of(client, "wide")]
    assert max(sizes) <= protocol.MAX_RUN_EVENT_BATCH_BYTES + 4096, f"a notification of {max(sizes)} bytes"
    steps = [e["step"] for e in events() if e["type"] == "scalars"]
    assert len(steps) >= 100 and steps == sorted(steps)  # most of them, in order
