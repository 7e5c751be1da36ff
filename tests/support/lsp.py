"""pytest-lsp plumbing for the language-server tests (tests/server): the real server over stdio, started as the
extension starts it.

``make_client`` records the server's custom notifications (``tensorsight/runEvent``, ``/gpu``, ``/status``) and
answers the refresh requests VS Code would get; ``server_config`` takes the launch from the extension's own launch
function (``support.extension_launch``: isolated ``-I`` bootstrap, working directory ``pyhelpers``), with an
optional extra environment, bundled-libraries folder or interpreter flags. Helpers open documents, wait for what the
server publishes, and apply LSP text edits.
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from lsprotocol import types
from pygls.protocol.json_rpc import JsonRPCNotification
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities, make_test_lsp_client

from support.extension_launch import extension_launch
from support.paths import PYHELPERS

WAIT_SECONDS = 60.0


def make_client() -> LanguageClient:
    client = make_test_lsp_client()
    client.run_events = []  # type: ignore[attr-defined]
    client.run_event_batches = []  # type: ignore[attr-defined]
    client.gpu_reports = []  # type: ignore[attr-defined]
    client.statuses = []  # type: ignore[attr-defined]
    client.refreshes = []  # type: ignore[attr-defined]

    # Run events arrive in batches of hundreds: decode them as plain JSON, as VS Code does, not into pygls's
    # namedtuples (a class per object), or this client, not the server, becomes the bottleneck the tests measure.
    structure = client.protocol.structure_message

    def structure_plainly(data: dict[str, Any]) -> Any:
        if data.get("method") == "tensorsight/runEvent" and "id" not in data:
            return JsonRPCNotification(method=data["method"], jsonrpc=data["jsonrpc"], params=data.get("params"))
        return structure(data)

    client.protocol.structure_message = structure_plainly  # type: ignore[method-assign]

    @client.feature("tensorsight/runEvent")
    def run_event(ls: LanguageClient, params: Any) -> None:
        # One entry per event, as the extension fires them; each notification (a batch) is kept too.
        batch = _plain(params)
        ls.run_event_batches.append(batch)  # type: ignore[attr-defined]
        for event in batch["events"]:
            ls.run_events.append({"sessionId": batch["sessionId"], "event": event})  # type: ignore[attr-defined]

    @client.feature("tensorsight/gpu")
    def gpu(ls: LanguageClient, params: Any) -> None:
        ls.gpu_reports.append(_plain(params))  # type: ignore[attr-defined]

    @client.feature("tensorsight/status")
    def status(ls: LanguageClient, params: Any) -> None:
        ls.statuses.append(_plain(params))  # type: ignore[attr-defined]

    @client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def inlay_refresh(ls: LanguageClient, params: Any) -> None:
        ls.refreshes.append("inlayHint")  # type: ignore[attr-defined]

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def lens_refresh(ls: LanguageClient, params: Any) -> None:
        ls.refreshes.append("codeLens")  # type: ignore[attr-defined]

    return client


class ExtensionServerConfig(ClientServerConfig):
    """pytest-lsp's config plus the working directory the extension gives the server process."""

    def __init__(self, server_command: list[str], server_env: dict[str, str], cwd: str) -> None:
        super().__init__(server_command=server_command, client_factory=make_client, server_env=server_env)
        self.cwd = cwd

    async def start(self, devtools: str | None = None) -> Any:
        client = self.client_factory()
        await client.start_io(*self.get_server_command(devtools), env=self.server_env, cwd=self.cwd)
        return client


def server_config(
    extra_env: dict[str, str] | None = None,
    bundled_libs: str | None = None,
    python_flags: Sequence[str] = (),
    python: str = sys.executable,
) -> ExtensionServerConfig:
    """The real server exactly as the extension starts it. ``bundled_libs`` stands for the build's
    extension/bundled/libs (e.g. a fake pynvml); ``python_flags`` go before the extension's own arguments."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORSIGHT_")}
    env.update(extra_env or {})
    fields = {"bundledLibs": bundled_libs} if bundled_libs else {}
    launch = extension_launch("server", env, python=python, **fields)
    return ExtensionServerConfig([launch["command"], *python_flags, *launch["args"]], launch["env"], launch["cwd"])


async def initialize(client: LanguageClient, trusted: bool = True) -> None:
    """initialize as VS Code does, saying whether the workspace is trusted (the extension always says)."""
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"), initialization_options={"trusted": trusted}
        )
    )


def _plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


async def eventually(check: Callable[[], Any], timeout: float = WAIT_SECONDS, what: str = "condition") -> Any:
    """Poll ``check`` until it returns something truthy (returned), or fail after ``timeout`` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = check()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def open_and_wait(client: LanguageClient, path: str | pathlib.Path, text: str | None = None) -> str:
    """didOpen a file and wait for the server's diagnostics for it; returns the uri."""
    file = pathlib.Path(path)
    uri = file.as_uri()
    client.diagnostics.pop(uri, None)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=file.read_text() if text is None else text
            )
        )
    )
    await eventually(lambda: uri in client.diagnostics, what=f"diagnostics for {file.name}")
    return uri


def close(client: LanguageClient, uri: str) -> None:
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )


def apply_edits(text: str, edits: Sequence[types.TextEdit]) -> str:
    """Apply LSP edits (UTF-16 columns) to ``text``, back to front."""
    lines = text.split("\n")

    def offset(position: types.Position) -> int:
        if position.line >= len(lines):
            return len(text)
        before = sum(len(line) + 1 for line in lines[: position.line])
        line = lines[position.line]
        units = 0
        for index, char in enumerate(line):
            if units >= position.character:
                return before + index
            units += len(char.encode("utf-16-le")) // 2
        return before + len(line)

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
        lines = text.split("\n")
    return text


async def doctor_under_hub(
    client: LanguageClient, session_id: str, script: str, options: dict[str, Any], timeout: float = 240
) -> tuple[str, int]:
    """``python -m tensorsight doctor <script>`` reporting to the server's hub as a debuggee would (a session of its
    own, ``TENSORSIGHT_HUB``/``TOKEN``/``OPTIONS`` set as the extension sets them); waits for the run's ``bye``.
    Returns the doctor's output and pid."""
    session = await client.protocol.send_request_async("tensorsight/startSession", {"sessionId": session_id})
    session = session._asdict() if hasattr(session, "_asdict") else session
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORSIGHT_")}
    env.update(
        PYTHONPATH=PYHELPERS,
        TENSORSIGHT_HUB=session["address"],
        TENSORSIGHT_TOKEN=session["token"],
        TENSORSIGHT_OPTIONS=json.dumps(options),
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tensorsight", "doctor", script, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await asyncio.wait_for(process.communicate(), timeout)
    assert process.returncode in (0, 1), output.decode()
    await eventually(
        lambda: any(e["sessionId"] == session_id and e["event"]["type"] == "bye" for e in client.run_events),
        what="the run's bye",
    )
    return output.decode(), process.pid
