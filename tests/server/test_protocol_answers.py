"""The real language server speaks the contract (``tensorsight.core.protocol``) that ``protocol.ts`` is generated from.

Over stdio (pytest-lsp) and the hub's loopback socket: each custom request answers with exactly the fields its
declared interface has (``ValidateConditionResult`` with ``syntaxError`` and ``available``, which the TypeScript
types used to lack), the notifications carry their declared fields, and one event of every type an agent can send
goes in: the forwarded ones come out as ``tensorsight/runEvent`` with declared keys only, ``shape`` does not (it
becomes an inlay hint), and a ``timer`` measurement shows on hover at the timed line.
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import time

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from support.lsp import close, eventually, initialize, open_and_wait, server_config
from tensorsight.core import protocol
from tensorsight.core.findings import Finding

pytestmark = pytest.mark.asyncio(loop_scope="module")

SOURCE = """import torch
from tensorsight import Timer

def train(model, batches, optimizer):
    for step, batch in enumerate(batches):
        with Timer("data"):
            x = batch.float()
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
"""
TIMER_LINE = 6  # 1-based: `with Timer("data"):`
SHAPE_LINE = 7


@pytest_lsp.fixture(config=server_config(), scope="module")
async def client(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def request(client: LanguageClient, method: str, params: dict) -> object:
    result = await client.protocol.send_request_async(method, params)
    return _plain(result)


def _plain(value: object) -> object:
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def assert_fields(payload: object, interface: str) -> None:
    """``payload`` has every required field of ``interface`` and nothing it does not declare."""
    assert isinstance(payload, dict), payload
    declared = protocol.INTERFACES_BY_NAME[interface]
    required = {f.name for f in declared.fields if not f.optional}
    assert required <= set(payload), f"{interface} lacks {sorted(required - set(payload))}: {payload}"
    if not declared.open_ended:
        extra = set(payload) - set(protocol.field_names(interface))
        assert not extra, f"{interface} has undeclared fields {sorted(extra)}"


def samples(path: str, now: float) -> list[dict]:
    """One well-formed event of every type an agent sends after its hello, as the agent would write them."""
    seconds = {"data": 0.01, "forward": 0.02, "backward": 0.03, "optimizer": 0.004, "other": 0.001}
    finding = Finding("performance", "info", "a test finding", path, 8).to_dict()
    data: dict[str, dict] = {
        "finding": {"finding": finding},
        "nonfinite": {
            "file": path,
            "line": 8,
            "op": "aten::log",
            "phase": "forward",
            "step": 1,
            "nan": 3,
            "posinf": 0,
            "neginf": 0,
            "message": "NaN produced here",
            "title": "NaN",
        },
        "shape": {
            "file": path,
            "line": SHAPE_LINE,
            "text": "f32[8, 4]",
            "shape": [8, 4],
            "dtype": "float32",
            "device": "cpu",
            "step": 1,
            "name": "x",
        },
        "shape-map": {"model": "Net", "rows": []},
        "condition-error": {"expression": "tensorsight.spike(loss, 'x')", "message": "bad window", "location": "x:1"},
        "rank": {"rank": 0, "local_rank": 0, "world_size": 1, "host": "h", "source": "env", "origin": "debugger"},
        "rank-state": {
            "rank": 0,
            "local_rank": 0,
            "world_size": 1,
            "state": "running",
            "since": now,
            "heartbeat": 5.0,
            "step": 1,
        },
        "scalars": {"step": 1, "split": "train", "values": {"loss": 0.5}},
        "phases": {"step": 1, "seconds": seconds, "file": path, "line": 5},
        "phase-summary": {"steps": 1, "seconds": seconds, "file": path, "line": 5},
        "histogram": {"step": 1, "name": "fc.weight", "kind": "weight", "edges": [0.0, 1.0], "counts": [4]},
        "memory": {"step": 1, "cpu_rss_bytes": 1 << 20},
        "log": {"level": "INFO", "message": "step 1 loss 0.5"},
        "tensorboard": {"logdir": "/tmp/tb", "command": "tensorboard --logdir /tmp/tb"},
        "timer": {"name": "data", "seconds": 0.0125, "file": path, "line": TIMER_LINE},
        "run-finished": {"error": ""},
        "dropped": {"count": 0},
        "bye": {"dropped": 0},
    }
    assert set(data) | {protocol.HELLO} == protocol.EVENT_TYPES, "a declared event type has no sample here"
    return [{"type": kind, "pid": os.getpid(), "time": now, **values} for kind, values in data.items()]


async def test_every_agent_event_is_forwarded_or_shown_as_the_contract_says(client: LanguageClient, tmp_path):
    target = tmp_path / "train.py"
    target.write_text(SOURCE)
    uri = await open_and_wait(client, target)
    session = await request(client, protocol.START_SESSION, {"sessionId": "contract"})
    assert_fields(session, "StartSessionResult")
    host, port = str(session["address"]).rsplit(":", 1)
    assert host == protocol.HUB_HOST
    reader, writer = await asyncio.open_connection(host, int(port))
    hello = {
        "type": protocol.HELLO,
        "protocol": protocol.HUB_PROTOCOL,
        "token": session["token"],
        "pid": os.getpid(),
        "time": time.time(),
        "script": str(target),
        "argv": [str(target)],
        "origin": "doctor",
    }
    assert set(hello) - {"type"} == set(protocol.HELLO_KEYS)
    writer.write((json.dumps(hello) + "\n").encode())
    await writer.drain()
    welcome = json.loads(await asyncio.wait_for(reader.readline(), 30))
    assert welcome["type"] == protocol.WELCOME and set(welcome) - {"type"} == set(protocol.WELCOME_KEYS)
    for event in samples(str(target), time.time()):
        writer.write((json.dumps(event) + "\n").encode())
    await writer.drain()

    def of_this_session() -> list[dict]:
        return [e["event"] for e in client.run_events if e["sessionId"] == "contract"]

    await eventually(lambda: any(e["type"] == "bye" for e in of_this_session()), what="the bye run event")
    writer.close()
    forwarded = of_this_session()
    agent_types = {e["type"] for e in forwarded if e.get("origin") != "server" and e["type"] != "ranks"}
    assert agent_types == protocol.FORWARDED_EVENT_TYPES
    for event in forwarded:
        assert_fields(event, "RunEvent")
        if event["type"] == "ranks":
            for verdict in event["verdicts"]:
                assert_fields(verdict, "RankVerdict")
            continue
        allowed = {*protocol.COMMON_EVENT_KEYS, "rank", *protocol.all_keys(event["type"])}
        assert set(event) <= allowed, f"{event['type']} carries undeclared keys {sorted(set(event) - allowed)}"
    assert "token" not in next(e for e in forwarded if e["type"] == protocol.HELLO)

    hints = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=10, character=0)),
        )
    )
    assert [h.label for h in hints or []] == [": f32[8, 4]"]  # the shape event, shown instead of forwarded
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=TIMER_LINE - 1, character=10),
        )
    )
    assert hover is not None and "timer `data` last 12.5 ms" in hover.contents.value  # type: ignore[union-attr]

    status = client.statuses[-1]
    assert_fields(status, "StatusParams")
    (detail,) = [d for d in status["details"] if d["sessionId"] == "contract"]
    assert_fields(detail, "StatusDetail")
    assert detail["events"] >= len(protocol.EVENT_TYPES)
    assert client.gpu_reports
    for report in client.gpu_reports:
        assert_fields(report, "GpuParams")
    ended = await request(client, protocol.END_SESSION, {"sessionId": "contract"})
    assert ended == {"ended": True}
    assert_fields(ended, "EndSessionResult")
    close(client, uri)


@pytest.mark.parametrize(
    ("condition", "syntax_error"),
    [("tensorsight.nan(loss) or lose > 3", False), ("loss >", True)],
)
async def test_validate_condition_answers_every_declared_field(
    client: LanguageClient, tmp_path: pathlib.Path, condition: str, syntax_error: bool
):
    target = tmp_path / "cond.py"
    target.write_text(SOURCE)
    uri = await open_and_wait(client, target)
    answer = await request(client, protocol.VALIDATE_CONDITION, {"uri": uri, "line": 8, "condition": condition})
    close(client, uri)
    assert_fields(answer, "ValidateConditionResult")
    assert isinstance(answer, dict) and answer["available"] is True
    if syntax_error:
        assert isinstance(answer["syntaxError"], str) and answer["syntaxError"]
        assert answer["undefinedNames"] == []
    else:
        assert answer["syntaxError"] is None and answer["undefinedNames"] == ["lose"]


async def test_suggestions_are_declared_condition_suggestions(client: LanguageClient):
    answer = await request(client, protocol.SUGGEST_CONDITIONS, {"name": "loss"})
    assert isinstance(answer, list) and answer
    for suggestion in answer:
        assert_fields(suggestion, "ConditionSuggestion")
