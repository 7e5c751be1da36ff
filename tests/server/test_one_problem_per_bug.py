"""Problems through the real language server: one diagnostic per bug, whoever reported it (the rule on the open
document, the doctor's report the extension hands over with ``tensorsight/toolFindings``, the agent of a run), and
no findings left over from older runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from support.lsp import close, doctor_under_hub, eventually, initialize, open_and_wait, server_config
from support.paths import PYHELPERS, example

pytestmark = pytest.mark.asyncio(loop_scope="module")

SCRIPT = example("retained_graph.py")  # `total_loss += loss`: TS104 statically, a `memory` finding when it runs


@pytest_lsp.fixture(config=server_config(), scope="module")
async def client(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


def accumulation_line() -> int:
    (index,) = [n for n, text in enumerate(open(SCRIPT).read().split("\n")) if text.strip().startswith("total_loss +=")]
    return index


async def doctor_report() -> list[dict]:
    """``tensorsight doctor --json`` as the extension runs it (no hub): its findings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORSIGHT_")}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tensorsight", "doctor", "--json", SCRIPT, env={**env, "PYTHONPATH": PYHELPERS},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    output, _ = await asyncio.wait_for(process.communicate(), 240)
    return json.loads(output)["findings"]  # the script's own output goes to stderr


def sources_at(client: LanguageClient, uri: str, line: int) -> list[str | None]:
    return [d.source for d in at_line(client, uri, line)]


def cleared(client: LanguageClient, uri: str) -> bool:
    return uri in client.diagnostics and len(client.diagnostics[uri]) == 0


def at_line(client: LanguageClient, uri: str, line: int) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, []) if d.range.start.line == line]


@pytest.mark.timeout(400)
async def test_the_rule_the_doctor_and_the_run_show_one_problem(client: LanguageClient):
    line = accumulation_line()
    uri = await open_and_wait(client, SCRIPT)
    (static,) = at_line(client, uri, line)
    assert (str(static.code), static.source) == ("TS104", "TensorSight")

    # a debug run's agent reports the retained graph at the same line
    await doctor_under_hub(client, "run-1", SCRIPT, {"measure": True})
    await eventually(lambda: sources_at(client, uri, line) == ["TensorSight (rule + run)"], what="the run merged")
    (merged,) = at_line(client, uri, line)
    assert merged.source == "TensorSight (rule + run)" and str(merged.code) == "TS104"
    assert "keeps the autograd graph" in merged.message  # what the run observed, with its step count

    # the doctor's report (its rule finding and its own memory finding, one finding already) joins the same problem
    findings = await doctor_report()
    (reported,) = [f for f in findings if f["line"] == line + 1]
    assert reported["kind"] == "memory" and reported["details"]["code"] == "TS104"
    assert reported["details"]["sources"] == ["rule", "doctor"]
    answer = await client.protocol.send_request_async(
        "tensorsight/toolFindings", {"tool": "doctor", "findings": findings}
    )
    assert answer.accepted == len(findings)
    merged_sources = ["TensorSight (rule + doctor + run)"]
    await eventually(lambda: sources_at(client, uri, line) == merged_sources, what="the doctor's report merged")
    (merged,) = at_line(client, uri, line)
    assert merged.source == "TensorSight (rule + doctor + run)"
    assert len(client.diagnostics[uri]) == len({(d.range.start.line, str(d.code)) for d in client.diagnostics[uri]})

    # the rule's quick fix still applies to the merged problem
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=merged.range,
            context=types.CodeActionContext(diagnostics=[merged]),
        )
    )
    assert [a.title for a in actions or [] if isinstance(a, types.CodeAction) and a.diagnostics] == [
        "Accumulate loss.item() instead of the tensor (TS104)"
    ]
    await client.protocol.send_request_async("tensorsight/endSession", {"sessionId": "run-1"})  # as the editor does
    close(client, uri)


@pytest.mark.timeout(120)
async def test_a_new_report_or_session_drops_the_older_runs(client: LanguageClient, tmp_path):
    older = tmp_path / "older.py"
    older.write_text("import torch\nx = torch.ones(2)\n")
    uri = await open_and_wait(client, older)
    finding = {"kind": "memory", "severity": "warning", "message": "old", "file": str(older), "line": 2}
    await client.protocol.send_request_async("tensorsight/toolFindings", {"tool": "doctor", "findings": [finding]})
    await eventually(lambda: client.diagnostics.get(uri), what="the report's finding")
    assert [d.source for d in client.diagnostics[uri]] == ["TensorSight (doctor)"]
    # the doctor run on another file replaces that report: the older file's finding goes
    await client.protocol.send_request_async("tensorsight/toolFindings", {"tool": "doctor", "findings": []})
    await eventually(lambda: cleared(client, uri), what="the older report dropped")
    # a report again, then a new debug session (none live): it starts from a clean Problems
    await client.protocol.send_request_async("tensorsight/toolFindings", {"tool": "doctor", "findings": [finding]})
    await eventually(lambda: client.diagnostics.get(uri), what="the report's finding again")
    await client.protocol.send_request_async("tensorsight/startSession", {"sessionId": "fresh"})
    await eventually(lambda: cleared(client, uri), what="dropped by the new session")
    await client.protocol.send_request_async("tensorsight/endSession", {"sessionId": "fresh"})
    close(client, uri)
