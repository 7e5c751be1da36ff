"""A hub that comes up after the debugged program started still gets the run from its first step (issue: the first F5
after trusting a folder ran "alone" while the language server restarted, and lost its hints and panel data).

A real ``python -m debugpy.adapter`` session runs ``programs/late_hub_training.py`` with the agent pointed at a
loopback port where nothing listens yet, and the token of a session of the real language server. Once the program has
made its first measured steps (while its connection attempts failed), a plain TCP relay opens that port onto the real
hub: the agent reconnects, and the server receives what the program published before, in order, with nothing
dropped: the scalars of the first steps for the training panel, and the shapes of the first steps as inlay hints.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pathlib

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from support.dap import DebugSession
from support.dap_multi import free_port
from support.lsp import close, eventually, initialize, open_and_wait, server_config

pytestmark = pytest.mark.asyncio(loop_scope="module")

PROGRAM = str(pathlib.Path(__file__).parent / "programs" / "late_hub_training.py")


@pytest_lsp.fixture(config=server_config(), scope="module")
async def client(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def relay(port: int, target: str) -> asyncio.AbstractServer:
    """Listen on ``port`` and pipe every connection both ways to ``target`` ("127.0.0.1:PORT"): the hub, now up."""
    host, target_port = target.rsplit(":", 1)

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        hub_reader, hub_writer = await asyncio.open_connection(host, int(target_port))
        await asyncio.gather(pipe(reader, hub_writer), pipe(hub_reader, writer))

    return await asyncio.start_server(serve, "127.0.0.1", port)


@pytest.mark.timeout(300)
async def test_a_hub_that_comes_up_after_the_program_gets_its_first_steps(client: LanguageClient, tmp_path):
    uri = await open_and_wait(client, PROGRAM)
    hub = await client.protocol.send_request_async("tensorsight/startSession", {"sessionId": "late"})
    port = free_port()
    go = tmp_path / "go"
    env = {"TENSORSIGHT_HUB": f"127.0.0.1:{port}", "TENSORSIGHT_TOKEN": hub.token, "TENSORSIGHT_SESSION": "late"}
    options = {"breakOnNonFinite": True, "checkLeakage": False}  # what a plain F5 sends; measure and shapes default on
    session = await asyncio.to_thread(DebugSession.launch, PROGRAM, args=[str(go)], options=options, env=env)
    listener = None
    try:
        await eventually(lambda: "early steps done" in session.stdout(), what="the first steps, with no hub yet")
        assert not [e for e in client.run_events if e["sessionId"] == "late"]
        listener = await relay(port, hub.address)
        await eventually(
            lambda: any(e["event"]["type"] == "scalars" for e in client.run_events if e["sessionId"] == "late"),
            what="the first steps' scalars, sent once the hub is up",
        )
        go.write_text("")
        assert await asyncio.to_thread(session.wait_for_exit) == 0
        events = [e["event"] for e in client.run_events if e["sessionId"] == "late"]
        await eventually(
            lambda: any(e["event"]["type"] == "bye" for e in client.run_events if e["sessionId"] == "late"),
            what="the program's bye",
        )
        events = [e["event"] for e in client.run_events if e["sessionId"] == "late"]
    finally:
        await asyncio.to_thread(session.close)
        if listener is not None:
            listener.close()
    assert events[0]["type"] == "hello" and events[0]["pid"] != os.getpid()
    steps = [e["step"] for e in events if e["type"] == "scalars" and e.get("split") == "train"]
    assert steps[:3] == sorted(steps[:3]) and len(steps) == 5, steps  # the early steps too, in order
    assert not [e for e in events if e["type"] == "dropped"]
    assert [e["dropped"] for e in events if e["type"] == "bye"] == [0]

    # the shapes observed in the first steps (before the hub was there) are the editor's inlay hints
    found = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=60, character=0)),
        )
    )
    source = pathlib.Path(PROGRAM).read_text().split("\n")
    by_text = {source[h.position.line].strip(): str(h.label) for h in found or []}
    assert by_text.get("prediction = model(inputs)") == ": f32[64, 1]", by_text
    assert by_text.get("loss = ((prediction - targets) ** 2).mean()") == ": f32[]", by_text
    close(client, uri)
