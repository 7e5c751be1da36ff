"""The runtime hub of the real language server: sessions on loopback with per-session tokens, the wire protocol
(bad token and malformed events rejected and logged, nothing crashes), and a real training run under the agent whose
events become inlay hints, hovers, a code lens, runtime diagnostics and notifications for the extension.
"""

from __future__ import annotations

import asyncio
import json
import pathlib

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from support.lsp import close, doctor_under_hub, eventually, initialize, open_and_wait, server_config
from support.paths import marked_lines, program

pytestmark = pytest.mark.asyncio(loop_scope="module")

TRAINING = program("hub_training.py")


@pytest_lsp.fixture(config=server_config(), scope="module")
async def client(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def request(client: LanguageClient, method: str, params: dict) -> dict:
    result = await client.protocol.send_request_async(method, params)
    return result._asdict() if hasattr(result, "_asdict") else result


async def connect(address: str, hello: dict | str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, dict]:
    host, port = address.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(((hello if isinstance(hello, str) else json.dumps(hello)) + "\n").encode())
    await writer.drain()
    answer = json.loads(await asyncio.wait_for(reader.readline(), 30))
    return reader, writer, answer


def logged(client: LanguageClient, fragment: str) -> list[str]:
    return [m.message for m in client.log_messages if fragment in m.message]


async def test_sessions_listen_on_loopback_with_their_own_token(client: LanguageClient):
    first = await request(client, "tensorsight/startSession", {"sessionId": "a"})
    second = await request(client, "tensorsight/startSession", {"sessionId": "b"})
    again = await request(client, "tensorsight/startSession", {"sessionId": "a"})
    assert first["address"].startswith("127.0.0.1:") and second["address"].startswith("127.0.0.1:")
    assert first["address"] != second["address"] and first["token"] != second["token"]
    assert len(first["token"]) >= 32 and again == first
    await eventually(lambda: client.statuses and client.statuses[-1]["sessions"] == 2, what="status with 2 sessions")
    assert await request(client, "tensorsight/endSession", {"sessionId": "b"}) == {"ended": True}
    assert await request(client, "tensorsight/endSession", {"sessionId": "b"}) == {"ended": False}
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", int(second["address"].rsplit(":", 1)[1]))
    await eventually(lambda: client.statuses[-1]["sessions"] == 1, what="status after endSession")
    assert client.statuses[-1]["state"] == "waiting"


async def test_bad_token_is_rejected_and_logged(client: LanguageClient):
    session = await request(client, "tensorsight/startSession", {"sessionId": "a"})
    reader, writer, answer = await connect(session["address"], {"type": "hello", "token": "guess", "pid": 4242})
    assert answer == {"type": "rejected", "reason": "bad token"}
    assert await asyncio.wait_for(reader.read(), 10) == b""  # closed by the hub
    writer.close()
    reader, writer, answer = await connect(session["address"], "GET / HTTP/1.1")
    assert answer["type"] == "rejected"
    writer.close()
    await eventually(lambda: logged(client, "bad token from pid 4242"), what="the rejection in the log")
    assert logged(client, "first line is not a hello")


async def test_malformed_events_are_rejected_and_the_connection_survives(client: LanguageClient, tmp_path):
    session = await request(client, "tensorsight/startSession", {"sessionId": "a"})
    target = tmp_path / "model_step.py"
    target.write_text("import torch\nx = torch.zeros(2, 3)\ny = x @ x.T\n")
    uri = await open_and_wait(client, target)
    reader, writer, answer = await connect(
        session["address"], {"type": "hello", "token": session["token"], "pid": 777, "protocol": 1}
    )
    assert answer == {"type": "welcome", "sessionId": "a"}
    for bad in (
        "this is not json",
        "[1, 2, 3]",
        '{"no": "type"}',
        json.dumps({"type": "shape", "file": str(target), "line": "seven", "text": "f32[2, 3]"}),
        '{"type": "finding", "finding": {"kind": "no-such-kind", "severity": "error"}}',
        "[" * 100000,
    ):
        writer.write(bad.encode() + b"\n")
    good = {"type": "shape", "file": str(target), "line": 2, "name": "x", "text": "f32[2, 3]", "step": 0, "pid": 777}
    writer.write((json.dumps(good) + "\n").encode())
    await writer.drain()

    async def hints() -> list[types.InlayHint]:
        found = await client.text_document_inlay_hint_async(
            types.InlayHintParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=3, character=0)),
            )
        )
        return list(found or [])

    deadline = asyncio.get_running_loop().time() + 30
    while not (found := await hints()) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    (hint,) = found
    assert hint.label == ": f32[2, 3]" and hint.position == types.Position(line=1, character=1)
    assert len(logged(client, "rejected a malformed event from pid 777")) == 4
    assert logged(client, "malformed shape event")
    assert logged(client, "malformed finding event")
    assert not reader.at_eof()  # still connected
    writer.close()
    close(client, uri)
    # and the server still serves requests
    assert (await request(client, "tensorsight/startSession", {"sessionId": "a"}))["token"] == session["token"]


async def test_bad_requests_get_errors_not_crashes(client: LanguageClient):
    with pytest.raises(Exception, match="sessionId"):
        await client.protocol.send_request_async("tensorsight/startSession", {"session": 1})
    with pytest.raises(Exception, match="line"):
        await client.protocol.send_request_async(
            "tensorsight/validateCondition", {"uri": "file:///x.py", "line": -1, "condition": "x"}
        )
    assert (await request(client, "tensorsight/startSession", {"sessionId": "a"}))["address"]


async def run_under_agent(client: LanguageClient, session_id: str) -> tuple[str, int]:
    """``python -m tensorsight doctor hub_training.py`` with the hub's address and token, as the extension sets them."""
    await request(client, "tensorsight/endSession", {"sessionId": "a"})
    options = {"breakOnNonFinite": True, "measure": True, "observeShapes": True}
    return await doctor_under_hub(client, session_id, TRAINING, options)


@pytest.mark.timeout(300)
async def test_a_real_training_run_becomes_hints_hovers_lenses_and_diagnostics(client: LanguageClient):
    lines = marked_lines(TRAINING)
    uri = await open_and_wait(client, TRAINING)
    output, _ = await run_under_agent(client, "run-1")
    assert "step 5" in output

    # notifications for the training panel: the hello, scalars (non-finite values as JSON-safe strings), phases
    events = [e["event"] for e in client.run_events if e["sessionId"] == "run-1"]
    kinds = {e["type"] for e in events}
    assert {"hello", "scalars", "phases", "bye"} <= kinds
    assert "shape" not in kinds and all("token" not in e for e in events)
    losses = [e["values"]["loss"] for e in events if e["type"] == "scalars" and e.get("split") == "train"]
    assert losses and any(value in ("NaN", "Infinity") for value in losses)
    assert all(isinstance(value, (int, float)) for value in losses[:3])

    # inlay hints with the observed shapes at assignment lines
    hints = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=60, character=0)),
        )
    )
    by_line = {h.position.line + 1: h for h in hints or []}
    source_lines = pathlib.Path(TRAINING).read_text().split("\n")
    hidden = by_line[lines["hidden"]]
    assert hidden.label == ": f32[64, 16]"
    assert source_lines[lines["hidden"] - 1][: hidden.position.character].endswith("h")
    assert by_line[lines["prediction"]].label == ": f32[64, 1]"

    # hover on the name at that line: the last observed tensor
    column = source_lines[lines["hidden"] - 1].index("h =")
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=lines["hidden"] - 1, character=column),
        )
    )
    assert hover is not None and "f32[64, 16]" in hover.contents.value and "float32" in hover.contents.value

    # the code lens above the training loop carries the measured phase breakdown
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    (lens,) = [lens for lens in lenses or [] if lens.range.start.line + 1 == lines["loop"]]
    assert lens.command is not None and "forward" in lens.command.title and "ms/step" in lens.command.title

    # the observed shape sharpens the breakpoint-condition suggestions for that name at that line
    suggestions = await client.protocol.send_request_async(
        "tensorsight/suggestConditions", {"name": "prediction", "uri": uri, "line": lines["prediction"] - 1}
    )
    assert "not tensorsight.shape_is(prediction, (None, 1))" in [s["condition"] for s in suggestions]

    # runtime findings become diagnostics (source "TensorSight (run)") on the training script
    runtime = [d for d in client.diagnostics.get(uri, []) if d.source == "TensorSight (run)"]
    assert runtime and all(d.range.start.line >= 0 for d in runtime)
    status = client.statuses[-1]
    assert status["details"][0]["events"] > 10
    close(client, uri)


@pytest.mark.timeout(300)
async def test_the_nan_origin_becomes_a_diagnostic(client: LanguageClient):
    lines = marked_lines(TRAINING)
    uri = await open_and_wait(client, TRAINING)
    await run_under_agent(client, "run-2")
    await eventually(
        lambda: [d for d in client.diagnostics.get(uri, []) if d.range.start.line + 1 == lines["nan"]],
        what="a diagnostic at the NaN line",
    )
    (origin,) = [
        d for d in client.diagnostics[uri] if d.range.start.line + 1 == lines["nan"] and d.source == "TensorSight (run)"
    ]
    assert origin.severity == types.DiagnosticSeverity.Error
    assert (origin.data or {}).get("kind") == "nonfinite"  # from a `nonfinite` event or a nonfinite finding
    close(client, uri)


@pytest.mark.timeout(300)
async def test_a_debugpy_session_reports_while_paused(client: LanguageClient):
    """The extension's path: the agent injected by debugpy sends events, and keeps sending while the program is
    stopped at a breakpoint (the sender thread is not suspended with the user's threads)."""
    from support.dap import DebugSession

    lines = marked_lines(TRAINING)
    uri = await open_and_wait(client, TRAINING)
    await request(client, "tensorsight/endSession", {"sessionId": "a"})
    session = await request(client, "tensorsight/startSession", {"sessionId": "debug-1"})
    env = {"TENSORSIGHT_HUB": session["address"], "TENSORSIGHT_TOKEN": session["token"]}
    debug = await asyncio.to_thread(
        DebugSession.launch,
        TRAINING,
        breakpoints=[(TRAINING, lines["nan"], "step == 2")],
        options={"breakOnNonFinite": False, "measure": True, "observeShapes": True},
        env=env,
    )
    try:
        stop = await asyncio.to_thread(debug.wait_for_stop)

        def phases_of_this_run() -> list[dict]:
            return [
                e["event"] for e in client.run_events if e["sessionId"] == "debug-1" and e["event"]["type"] == "phases"
            ]

        await eventually(phases_of_this_run, what="phase events while the program is paused")
        threads = await asyncio.to_thread(debug.request, "threads", {})
        assert "tensorsight-hub-client" not in [t["name"] for t in threads["threads"]]  # hidden from the user
        hello = next(e["event"] for e in client.run_events if e["sessionId"] == "debug-1")
        assert hello["type"] == "hello" and hello["origin"] == "debugger"
        await asyncio.to_thread(debug.continue_, stop["threadId"])
        assert await asyncio.to_thread(debug.wait_for_exit) == 0
    finally:
        await asyncio.to_thread(debug.close)
    await eventually(
        lambda: any(e["sessionId"] == "debug-1" and e["event"]["type"] == "bye" for e in client.run_events),
        what="the debuggee's bye",
    )
    hints = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=60, character=0)),
        )
    )
    assert any(h.position.line + 1 == lines["prediction"] and h.label == ": f32[64, 1]" for h in hints or [])
    close(client, uri)
