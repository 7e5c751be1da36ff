"""The real language server over stdio on a workspace of several files: the static rules follow the training script
into the project's other modules and the server publishes diagnostics there too (a trainer class in ``trainer.py``
that lost its ``zero_grad()``), judges a file with what its callers do, and re-judges when an imported file changes.
Also the single-file cases the held-out suite missed: an evaluation helper without eval()/no_grad, ``running +=
loss`` with the step in a helper.

Fixtures: tests/fixtures/rules/project_trainer (bugs marked ``# expect: TSNNN`` in the imported files) and
tests/fixtures/rules/project_clean (its clean twin).
"""

from __future__ import annotations

import os
import pathlib
import re

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from support.lsp import close, eventually, open_and_wait, server_config
from support.paths import REPO

pytestmark = pytest.mark.asyncio(loop_scope="module")

RULES = pathlib.Path(REPO, "tests", "fixtures", "rules")
PROJECT = RULES / "project_trainer"
CLEAN = RULES / "project_clean"
EXPECT = re.compile(r"# expect: (TS\d{3})")


@pytest_lsp.fixture(config=server_config(), scope="module")
async def client(lsp_client: LanguageClient):
    # VS Code opens the folder as the workspace: absolute imports also resolve from its root
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options={"trusted": True},
            workspace_folders=[types.WorkspaceFolder(uri=RULES.as_uri(), name="rules")],
        )
    )
    yield
    await lsp_client.shutdown_session()


def expected(path: pathlib.Path) -> set[tuple[int, str]]:
    text = path.read_text()
    return {(n, code) for n, line in enumerate(text.split("\n"), 1) for code in EXPECT.findall(line)}


def codes_and_lines(client: LanguageClient, uri: str) -> set[tuple[int, str]]:
    return {(d.range.start.line + 1, str(d.code)) for d in client.diagnostics.get(uri, [])}


async def wait_for(client: LanguageClient, uri: str, wanted: set[tuple[int, str]], what: str) -> None:
    await eventually(lambda: codes_and_lines(client, uri) == wanted, what=what)


async def test_findings_in_the_imported_modules_are_published_at_their_lines(client: LanguageClient):
    for name in ("trainer.py", "engine.py", "models.py"):
        client.diagnostics.pop((PROJECT / name).as_uri(), None)
    entry = await open_and_wait(client, PROJECT / "train.py")
    assert list(client.diagnostics[entry]) == []  # the script itself is fine: the bugs are in the other files
    trainer, engine = (PROJECT / "trainer.py").as_uri(), (PROJECT / "engine.py").as_uri()
    await wait_for(client, trainer, {(15, "TS101")}, "TS101 in trainer.py, which is not open")
    await wait_for(client, engine, expected(PROJECT / "engine.py"), "TS104 and TS102 in engine.py")
    assert expected(PROJECT / "trainer.py") == {(15, "TS101")}
    (backward,) = client.diagnostics[trainer]
    line = (PROJECT / "trainer.py").read_text().split("\n")[backward.range.start.line]
    assert line[backward.range.start.character : backward.range.end.character] == "loss.backward()"
    assert backward.source == "TensorSight" and "zero_grad()" in backward.message
    by_code = {str(d.code): d for d in client.diagnostics[engine]}
    assert "Dropout" in by_code["TS102"].message  # known from models.Net, two files away from engine.py
    # closing the script takes its findings in the files it imported away
    close(client, entry)
    await wait_for(client, trainer, set(), "trainer.py cleared once train.py is closed")
    await wait_for(client, engine, set(), "engine.py cleared once train.py is closed")


async def test_an_open_imported_file_is_judged_with_its_callers(client: LanguageClient):
    engine_uri = await open_and_wait(client, PROJECT / "engine.py")
    # alone, nothing says the evaluated model has dropout: under no_grad that is not a warning
    assert codes_and_lines(client, engine_uri) == {(14, "TS104")}
    entry = await open_and_wait(client, PROJECT / "train.py")
    await wait_for(client, engine_uri, expected(PROJECT / "engine.py"), "TS102 once train.py (the caller) is open")
    close(client, entry)
    await wait_for(client, engine_uri, {(14, "TS104")}, "engine.py back to its own analysis")
    close(client, engine_uri)


async def test_fixing_the_trainer_in_its_buffer_clears_the_finding_published_for_it(client: LanguageClient):
    entry = await open_and_wait(client, PROJECT / "train.py")
    trainer_path = PROJECT / "trainer.py"
    trainer_uri = trainer_path.as_uri()
    await wait_for(client, trainer_uri, {(15, "TS101")}, "TS101 in trainer.py")
    await open_and_wait(client, trainer_path)
    assert codes_and_lines(client, trainer_uri) == {(15, "TS101")}
    text = trainer_path.read_text()
    fixed = text.replace(
        "                loss = self.criterion(",
        "                self.optimizer.zero_grad()\n                loss = self.criterion(",
    )
    assert fixed != text
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=trainer_uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)],
        )
    )
    await wait_for(client, trainer_uri, set(), "no TS101 once the open trainer.py clears its gradients")
    await wait_for(client, (PROJECT / "engine.py").as_uri(), expected(PROJECT / "engine.py"), "engine.py unchanged")
    close(client, trainer_uri)
    close(client, entry)


async def test_the_clean_project_gets_no_diagnostic_in_any_file(client: LanguageClient):
    files = sorted(CLEAN.rglob("*.py"))
    for path in files:
        client.diagnostics.pop(path.as_uri(), None)
    entry = await open_and_wait(client, CLEAN / "train.py")
    assert list(client.diagnostics[entry]) == []
    # nor does any file of its helpers package (engine.py, trainer.py, models.py), open or not
    for path in files:
        assert list(client.diagnostics.get(path.as_uri(), [])) == [], os.path.relpath(path, CLEAN)
    close(client, entry)


EVALUATION_HELPER = """\
import torch
import torch.nn.functional as F
from torch import nn

model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
val_x, val_y = torch.randn(64, 10), torch.randint(0, 3, (64,))
batches = [(torch.randn(16, 10), torch.randint(0, 3, (16,))) for _ in range(4)]


def evaluate(net):
    return F.cross_entropy(net(val_x), val_y).item()


def train_step(x, y):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def train_epoch():
    running = 0.0
    for x, y in batches:
        loss = train_step(x, y)
        running += loss
    return running / len(batches)


for epoch in range(3):
    print(epoch, float(train_epoch()), evaluate(model))
"""


async def test_evaluation_helper_and_running_loss_in_one_file(client: LanguageClient, tmp_path):
    path = tmp_path / "train.py"
    path.write_text(EVALUATION_HELPER)
    uri = await open_and_wait(client, path)
    lines = EVALUATION_HELPER.split("\n")
    got = codes_and_lines(client, uri)
    assert got == {
        (lines.index("    return F.cross_entropy(net(val_x), val_y).item()") + 1, "TS102"),
        (lines.index("        running += loss") + 1, "TS104"),
    }
    clean = (
        EVALUATION_HELPER.replace("running += loss\n", "running += loss.item()\n")
        .replace("def evaluate(net):\n", "@torch.no_grad()\ndef evaluate(net):\n    net.eval()\n")
        .replace("    running = 0.0\n", "    model.train()\n    running = 0.0\n")
    )
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=clean)],
        )
    )
    await eventually(lambda: list(client.diagnostics.get(uri, [None])) == [], what="no diagnostic once both are fixed")
    close(client, uri)
