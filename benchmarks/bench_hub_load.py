"""The runtime hub under a hostile or runaway local peer: what it costs the language server, one run each.

1. 500 connections without the token, each holding a partial hello (half 3 KB, half 256 KiB, no newline): the
   server's RSS growth (target <= 64 MiB) and an LSP request's latency meanwhile (target <= 1 s).
2. 100,000 valid events from one logged-in process (tests/programs/hub_flood.py: 80,000 scalars, 20,000 findings on
   as many files): the ``tensorsight/runEvent`` and ``publishDiagnostics`` notifications the editor gets, and the
   slowest LSP request while they arrive (target <= 1 s).

``--pyhelpers DIR`` measures another build's server (e.g. an older commit exported with ``git archive``), to compare.

    .venv/bin/python benchmarks/bench_hub_load.py [--pyhelpers DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import sys
import tempfile
import time
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.protocol.json_rpc import JsonRPCNotification

REPO = pathlib.Path(__file__).resolve().parents[1]
FLOOD = REPO / "tests" / "programs" / "hub_flood.py"
LATENCY_TARGET_S = 1.0
RSS_TARGET = 64 << 20


def server_command(pyhelpers: pathlib.Path) -> list[str]:
    bootstrap = pyhelpers / "tensorsight" / "launch.py"
    if bootstrap.exists():
        return [sys.executable, "-I", str(bootstrap), "--path", str(pyhelpers), "-m", "tensorsight.server"]
    return [sys.executable, "-m", "tensorsight.server"]  # an older build: PYTHONPATH and the working directory


def rss(pid: int) -> int:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


async def latency(client: LanguageClient) -> float:
    began = time.perf_counter()
    await client.protocol.send_request_async("tensorsight/suggestConditions", {"name": "loss"})
    return time.perf_counter() - began


async def main(pyhelpers: pathlib.Path) -> None:
    client = LanguageClient("bench", "1")
    counts = {"runEvent": 0, "events": 0, "publishDiagnostics": 0}
    structure = client.protocol.structure_message

    def plain(data: dict[str, Any]) -> Any:  # decode run events as plain JSON, as VS Code does
        if data.get("method") == "tensorsight/runEvent":
            return JsonRPCNotification(method=data["method"], jsonrpc=data["jsonrpc"], params=data.get("params"))
        return structure(data)

    client.protocol.structure_message = plain  # type: ignore[method-assign]
    bye = asyncio.Event()

    @client.feature("tensorsight/runEvent")
    def on_run_event(params: Any) -> None:
        events = params.get("events") or [params.get("event")]
        counts["runEvent"] += 1
        counts["events"] += len(events)
        if any(isinstance(e, dict) and e.get("type") == "bye" for e in events):
            bye.set()

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def on_log(params: Any) -> None:
        pass

    @client.feature("tensorsight/status")
    def on_status(params: Any) -> None:
        pass

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        counts["publishDiagnostics"] += 1

    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORSIGHT_")}
    env["PYTHONPATH"] = str(pyhelpers)
    command = server_command(pyhelpers)
    await client.start_io(*command, env=env, cwd=str(pyhelpers))
    await client.initialize_async(
        types.InitializeParams(capabilities=types.ClientCapabilities(), initialization_options={"trusted": True})
    )
    client.initialized(types.InitializedParams())
    pid = client._server.pid  # type: ignore[union-attr]

    session = await client.protocol.send_request_async("tensorsight/startSession", {"sessionId": "pending"})
    host, port = session.address.rsplit(":", 1)
    await latency(client)
    before = rss(pid)
    writers = []
    for index in range(500):
        try:
            _, writer = await asyncio.open_connection(host, int(port))
        except OSError:
            continue
        writer.write(b'{"type": "hello", "token": "' + b"x" * (3000 if index % 2 else 256 * 1024))
        writers.append(writer)
    await asyncio.sleep(1.0)
    growth = rss(pid) - before
    took = max([await latency(client) for _ in range(3)])
    for writer in writers:
        writer.close()
    print(f"500 pending connections: RSS +{growth / (1 << 20):.1f} MiB ({growth / RSS_TARGET:.2f} of the target)")
    print(f"  LSP request meanwhile: {took * 1000:.0f} ms ({took / LATENCY_TARGET_S:.2f} of the target)")

    session = await client.protocol.send_request_async("tensorsight/startSession", {"sessionId": "flood"})
    host, port = session.address.rsplit(":", 1)
    counts.update(runEvent=0, events=0, publishDiagnostics=0)
    with tempfile.TemporaryDirectory() as folder:
        began = time.perf_counter()
        flood = await asyncio.create_subprocess_exec(sys.executable, str(FLOOD), host, port, session.token, folder)
        slowest = 0.0
        while not bye.is_set() and time.perf_counter() - began < 300:
            slowest = max(slowest, await latency(client))
            await asyncio.sleep(0.1)
        elapsed = time.perf_counter() - began
        await asyncio.sleep(1.0)  # the last refresh
        if flood.returncode is None:
            flood.kill()
        await flood.wait()
    print(f"100,000 events: handled in {elapsed:.1f} s (bye {'seen' if bye.is_set() else 'never seen'})")
    print(f"  runEvent notifications: {counts['runEvent']} carrying {counts['events']} events")
    print(f"  publishDiagnostics notifications: {counts['publishDiagnostics']}")
    print(f"  slowest LSP request meanwhile: {slowest * 1000:.0f} ms ({slowest / LATENCY_TARGET_S:.2f} of the target)")
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pyhelpers", type=pathlib.Path, default=REPO / "pyhelpers")
    asyncio.run(main(parser.parse_args().pyhelpers.resolve()))
