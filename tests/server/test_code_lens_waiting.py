"""The training-loop code lens through the real language server over stdio, while a Debug Training session of the
file runs: from the agent's hello until the first measured step it says the run is measuring and waits for that step
(it said "run it with Debug Training", untrue during such a run); the first ``phases`` event gives the breakdown; a
process that ends before any step, or its ended session, gives the hint back. Each change asks for a lens refresh.
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from support.lsp import close, eventually, initialize, open_and_wait, server_config

pytestmark = pytest.mark.asyncio(loop_scope="module")

SCRIPT = """import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    optimizer.zero_grad()
    loss = model(torch.randn(8, 4)).pow(2).mean()
    loss.backward()
    optimizer.step()
"""
LOOP_LINE = 5  # 1-based line of the `for`


@pytest_lsp.fixture(config=server_config(), scope="module")
async def client(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def request(client: LanguageClient, method: str, params: dict) -> dict:
    result = await client.protocol.send_request_async(method, params)
    return result._asdict() if hasattr(result, "_asdict") else result


async def agent(address: str, token: str, pid: int, script: str) -> asyncio.StreamWriter:
    """A debuggee's agent as the hub sees it: the hello naming its script, then events (one JSON line each)."""
    host, port = address.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    hello = {"type": "hello", "protocol": 1, "token": token, "pid": pid, "script": script, "origin": "debugger"}
    writer.write((json.dumps(hello) + "\n").encode())
    await writer.drain()
    assert json.loads(await asyncio.wait_for(reader.readline(), 30))["type"] == "welcome"
    return writer


async def send(writer: asyncio.StreamWriter, event: dict) -> None:
    writer.write((json.dumps(event) + "\n").encode())
    await writer.drain()


async def lens_title(client: LanguageClient, uri: str) -> str:
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    (lens,) = [lens for lens in lenses or [] if lens.range.start.line + 1 == LOOP_LINE]
    assert lens.command is not None
    return lens.command.title


async def title_becomes(client: LanguageClient, uri: str, check, what: str) -> str:
    """Polls the lens (as VS Code asks again after a refresh request) until ``check(title)``."""
    deadline = asyncio.get_running_loop().time() + 30
    while True:
        title = await lens_title(client, uri)
        if check(title):
            return title
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"the lens never showed {what}; last: {title!r}")
        await asyncio.sleep(0.05)


def refreshes(client: LanguageClient) -> int:
    return client.refreshes.count("codeLens")  # type: ignore[attr-defined]


def is_hint(title: str) -> bool:
    return "run it with Debug Training" in title


def is_waiting(title: str) -> bool:
    return "measuring" in title and "waiting for the first step" in title and not is_hint(title)


@pytest.mark.timeout(120)
async def test_the_lens_waits_for_the_first_step_while_a_session_of_the_file_runs(client, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    other = tmp_path / "other.py"
    other.write_text(SCRIPT)
    uri, other_uri = await open_and_wait(client, script), await open_and_wait(client, other)
    assert is_hint(await lens_title(client, uri))

    session = await request(client, "tensorsight/startSession", {"sessionId": "waiting"})
    before = refreshes(client)
    writer = await agent(session["address"], session["token"], 4101, os.fspath(script))
    await title_becomes(client, uri, is_waiting, "that the run waits for its first step")
    await eventually(lambda: refreshes(client) > before, what="a lens refresh after the hello")
    assert is_hint(await lens_title(client, other_uri))  # another file's loop: not this run's

    seconds = {"data": 0.001, "forward": 0.002, "backward": 0.006, "optimizer": 0.001, "other": 0.0}
    await send(writer, {"type": "phases", "pid": 4101, "step": 1, "file": os.fspath(script), "line": LOOP_LINE + 1,
                        "seconds": seconds})  # fmt: skip
    title = await title_becomes(client, uri, lambda t: "ms/step" in t, "the first step's breakdown")
    assert "backward 60%" in title and "10.0 ms/step" in title and "(step 1)" in title
    writer.close()
    await request(client, "tensorsight/endSession", {"sessionId": "waiting"})
    close(client, uri)
    close(client, other_uri)


@pytest.mark.timeout(120)
async def test_a_process_or_session_that_ends_before_a_step_gives_the_hint_back(client, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    uri = await open_and_wait(client, script)

    session = await request(client, "tensorsight/startSession", {"sessionId": "ends"})
    writer = await agent(session["address"], session["token"], 4102, os.fspath(script))
    await title_becomes(client, uri, is_waiting, "that the run waits for its first step")
    before = refreshes(client)
    await send(writer, {"type": "bye", "pid": 4102})
    await title_becomes(client, uri, is_hint, "the hint after the process's bye")
    await eventually(lambda: refreshes(client) > before, what="a lens refresh after the bye")

    # a session whose process is still running when the user stops it
    writer.close()
    session = await request(client, "tensorsight/startSession", {"sessionId": "stopped"})
    writer = await agent(session["address"], session["token"], 4103, os.fspath(script))
    await title_becomes(client, uri, is_waiting, "that the second run waits for its first step")
    before = refreshes(client)
    await request(client, "tensorsight/endSession", {"sessionId": "stopped"})
    await title_becomes(client, uri, is_hint, "the hint after the session ended")
    await eventually(lambda: refreshes(client) > before, what="a lens refresh after the session ended")
    writer.close()
    close(client, uri)
