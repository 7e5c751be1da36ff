"""The runtime hub of the real language server against a hostile local peer, on loopback, bounded in count and time:
unauthenticated connections holding partial lines cost little memory and do not slow LSP requests; a forged hello
cannot write long or extra lines into the log; a finding naming a FIFO, ``/dev/zero``, a symlink to it or a file
outside the workspace and the script's folder leaves the server responsive (and is never read), while a regular file
in the script's folder is; a flood of valid events is coalesced into a bounded number of notifications.
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import sys
import time
from typing import Any

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from support.lsp import eventually, initialize, server_config
from support.paths import program

pytestmark = pytest.mark.asyncio(loop_scope="module")

LATENCY_LIMIT = 1.0  # seconds an LSP request may take while the hub is under load (the bar)
MAX_LOG_LINE = 4096


@pytest_lsp.fixture(config=server_config(), scope="module")
async def client(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def start(client: LanguageClient, session_id: str) -> tuple[str, int, str]:
    session = await client.protocol.send_request_async("tensorsight/startSession", {"sessionId": session_id})
    host, port = session.address.rsplit(":", 1)
    return host, int(port), session.token


async def latency(client: LanguageClient) -> float:
    """Seconds a real LSP request (the breakpoint-condition suggestions) takes to answer."""
    began = time.perf_counter()
    await asyncio.wait_for(client.protocol.send_request_async("tensorsight/suggestConditions", {"name": "loss"}), 30)
    return time.perf_counter() - began


def server_rss(client: LanguageClient) -> int | None:
    """Resident memory of the server process in bytes (Linux), or None."""
    try:
        status = pathlib.Path(f"/proc/{client._server.pid}/status").read_text()  # type: ignore[attr-defined]
    except (OSError, AttributeError):
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return None


def log_lines(client: LanguageClient) -> list[str]:
    return [m.message for m in client.log_messages]


async def welcome(host: str, port: int, hello: dict[str, Any]) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write((json.dumps(hello) + "\n").encode())
    await writer.drain()
    answer = json.loads(await asyncio.wait_for(reader.readline(), 30))
    assert answer["type"] == "welcome", answer
    return reader, writer


@pytest.mark.timing  # bounds a wall time: scripts/test.sh runs it with nothing beside it
@pytest.mark.timeout(180)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RSS from /proc")
async def test_500_unauthenticated_connections_holding_partial_lines_cost_little(client: LanguageClient):
    host, port, _ = await start(client, "pending")
    await latency(client)
    before = server_rss(client)
    assert before is not None
    writers: list[asyncio.StreamWriter] = []
    try:
        for index in range(500):
            try:
                _, writer = await asyncio.open_connection(host, port)
            except OSError:
                continue  # the listener's backlog was full for a moment: a refused connection costs nothing
            # half stay under the hello limit and wait, half send 256 KiB: neither ever sends a newline
            writer.write(b'{"type": "hello", "token": "' + b"x" * (3000 if index % 2 else 256 * 1024))
            writers.append(writer)
        await asyncio.sleep(0.5)  # let the server take in what was sent
        growth = (server_rss(client) or 0) - before
        took = max([await latency(client) for _ in range(3)])
    finally:
        for writer in writers:
            writer.close()
    assert len(writers) >= 400
    assert growth <= 64 << 20, f"the server grew by {growth / (1 << 20):.1f} MiB"
    assert took < LATENCY_LIMIT, f"an LSP request took {took:.2f} s"
    assert any("waiting for their hello; refusing more" in line for line in log_lines(client))
    await client.protocol.send_request_async("tensorsight/endSession", {"sessionId": "pending"})
    ended = await eventually(lambda: [m for m in log_lines(client) if "session pending ended" in m], 10)
    assert "refused while 64 waited for their hello" in ended[-1]


@pytest.mark.timeout(60)
async def test_a_forged_hello_writes_no_long_and_no_extra_log_line(client: LanguageClient):
    host, port, token = await start(client, "forged")
    forged_pid = "4242\n[error] TensorSight: forged line\r\n" + "A" * 3000
    for hello in (
        {"type": "hello", "token": "guess", "pid": forged_pid},  # under the hello limit: bad token
        {"type": "hello", "token": "guess", "pid": "1\n[error] forged\n" * 12_000},  # 200 KiB: too long
    ):
        reader, writer = await asyncio.open_connection(host, port)
        writer.write((json.dumps(hello) + "\n").encode())
        await writer.drain()
        answer = json.loads(await asyncio.wait_for(reader.readline(), 30))
        assert answer["type"] == "rejected"
        writer.close()
    # with the token, a forged pid is echoed in the malformed-event lines: escaped too
    _, writer = await welcome(host, port, {"type": "hello", "token": token, "pid": forged_pid})
    writer.write(b"not json\n")
    await writer.drain()
    await eventually(lambda: [m for m in log_lines(client) if "malformed event from pid 4242" in m], 10)
    await eventually(lambda: [m for m in log_lines(client) if "hello line too long" in m], 10)
    writer.close()
    bad_token = [m for m in log_lines(client) if "bad token from pid 4242" in m]
    assert bad_token and "\\n[error] TensorSight: forged line\\r\\n" in bad_token[0]
    for line in log_lines(client):
        assert len(line) <= MAX_LOG_LINE, f"a {len(line)}-character log line"
        assert "\n" not in line and "\r" not in line, f"a log line with a line break: {line[:200]!r}"


@pytest.mark.timing  # bounds a wall time: scripts/test.sh runs it with nothing beside it
@pytest.mark.timeout(90)
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
async def test_a_finding_naming_a_fifo_dev_zero_or_an_outside_file_leaves_the_server_responsive(
    client: LanguageClient, tmp_path_factory
):
    folder, elsewhere = tmp_path_factory.mktemp("run"), tmp_path_factory.mktemp("elsewhere")
    script = folder / "train.py"
    script.write_text("import torch\nloss = model(batch)  # the finding's line\n")
    fifo = folder / "pipe.py"
    os.mkfifo(fifo)
    zero_link = folder / "zero.py"
    zero_link.symlink_to("/dev/zero")
    outside = elsewhere / "secret.py"
    outside.write_text("x = 1\nthis line lies outside the workspace and the script's folder\n")
    host, port, token = await start(client, "files")
    _, writer = await welcome(host, port, {"type": "hello", "token": token, "pid": 31, "script": str(script)})
    targets = [fifo, pathlib.Path("/dev/zero"), zero_link, outside, script]
    for target in targets:
        finding = {"kind": "shape", "severity": "warning", "message": "a finding", "file": str(target), "line": 2}
        writer.write((json.dumps({"type": "finding", "pid": 31, "finding": finding}) + "\n").encode())
    await writer.drain()

    uris = {target: target.as_uri() for target in targets}
    await eventually(lambda: all(client.diagnostics.get(uri) for uri in uris.values()), 30, "every file's diagnostic")
    assert await latency(client) < LATENCY_LIMIT
    line = script.read_text().splitlines()[1]
    (read,) = client.diagnostics[uris[script]]
    assert (read.range.start.line, read.range.end.character) == (1, len(line))  # in the script's folder: read
    for target in (fifo, pathlib.Path("/dev/zero"), zero_link, outside):
        (placed,) = client.diagnostics[uris[target]]
        assert (placed.range.start.line, placed.range.end.character) == (1, 0), target  # placed, never read
    writer.close()
    assert await latency(client) < LATENCY_LIMIT


class CountingDiagnostics(dict):
    """pytest-lsp's store of published diagnostics, counting every publish."""

    publishes = 0

    def __setitem__(self, key: Any, value: Any) -> None:
        self.publishes += 1
        super().__setitem__(key, value)


@pytest.mark.timing  # bounds a wall time: scripts/test.sh runs it with nothing beside it
@pytest.mark.timeout(240)
async def test_100000_valid_events_are_coalesced_and_requests_stay_fast(client: LanguageClient, tmp_path):
    host, port, token = await start(client, "flood")
    counted = CountingDiagnostics(client.diagnostics)
    client.diagnostics = counted
    batches_before = len(client.run_event_batches)  # type: ignore[attr-defined]
    latencies: list[float] = []
    began = time.perf_counter()
    # Another process floods the hub, as a debugged program would, so this loop only measures and listens.
    flood = await asyncio.create_subprocess_exec(
        sys.executable, program("hub_flood.py"), host, str(port), token, str(tmp_path), stderr=asyncio.subprocess.PIPE
    )

    def bye() -> bool:
        return any(
            e["sessionId"] == "flood" and e["event"]["type"] == "bye"
            for e in client.run_events  # type: ignore[attr-defined]
        )

    try:
        while not bye():
            latencies.append(await latency(client))
            await asyncio.sleep(0.1)
            assert time.perf_counter() - began < 180, "no bye within 180 s of the flood"
    finally:
        if flood.returncode is None:
            flood.kill()
        await flood.wait()
    elapsed = time.perf_counter() - began
    batches = [
        b
        for b in client.run_event_batches[batches_before:]
        if b["sessionId"] == "flood"  # type: ignore[attr-defined]
    ]
    events = [event for batch in batches for event in batch["events"]]
    assert max(latencies) < LATENCY_LIMIT, f"an LSP request took {max(latencies):.2f} s during the flood"
    assert len(batches) <= 4 * elapsed + 8, f"{len(batches)} runEvent notifications in {elapsed:.1f} s"
    assert any(e["type"] == "dropped" and e.get("origin") == "server" for e in events)  # the excess is counted
    assert any(e["type"] == "hello" for e in events)
    await asyncio.sleep(0.5)  # the last refresh
    assert counted.publishes <= 2 * 256, f"{counted.publishes} publishDiagnostics for 20,000 findings"
