"""The real language server over stdio: rule diagnostics on open and change, silence on correct code, quick fixes
that apply cleanly, and the start-up contract of the server as the extension starts it (bundled libraries first).
"""

from __future__ import annotations

import ast
import glob
import os
import pathlib
import re
import site
import sys
from collections import Counter

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from support.lsp import apply_edits, close, eventually, initialize, open_and_wait, server_config
from support.paths import REPO

pytestmark = pytest.mark.asyncio(loop_scope="module")

RULE_FIXTURES = sorted(glob.glob(os.path.join(REPO, "tests", "fixtures", "rules", "ts*.py")))
CORRECT_LOOPS = sorted(glob.glob(os.path.join(REPO, "tests", "fixtures", "correct_loops", "*.py")))
EXPECT = re.compile(r"# expect: (TS\d{3})")


@pytest_lsp.fixture(config=server_config(), scope="module")
async def client(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


def expected(path: str) -> set[tuple[int, str]]:
    text = pathlib.Path(path).read_text()
    return {(n, code) for n, line in enumerate(text.split("\n"), 1) for code in EXPECT.findall(line)}


async def test_each_rule_fixture_gets_exactly_its_diagnostics(client: LanguageClient):
    for path in RULE_FIXTURES:
        uri = await open_and_wait(client, path)
        diagnostics = client.diagnostics[uri]
        got = {(d.range.start.line + 1, str(d.code)) for d in diagnostics}
        assert got == expected(path), os.path.basename(path)
        for diagnostic in diagnostics:
            assert diagnostic.source == "TensorSight"
            assert diagnostic.severity in (types.DiagnosticSeverity.Warning, types.DiagnosticSeverity.Information)
            assert (diagnostic.message and diagnostic.range.end.character > diagnostic.range.start.character) or (
                diagnostic.range.end.line > diagnostic.range.start.line
            )
        close(client, uri)


async def test_correct_training_loops_get_no_diagnostic(client: LanguageClient):
    for path in CORRECT_LOOPS:
        uri = await open_and_wait(client, path)
        assert list(client.diagnostics[uri]) == [], os.path.basename(path)
        close(client, uri)


async def test_files_without_torch_are_left_alone(client: LanguageClient, tmp_path):
    path = tmp_path / "plain.py"
    text = "def f():\n    breakpoint()\n"
    uri = await open_and_wait(client, path.with_name("plain.py"), text=text) if path.write_text(text) else None
    assert uri is not None and list(client.diagnostics[uri]) == []


async def test_info_severity_and_ranges(client: LanguageClient):
    path = os.path.join(REPO, "tests", "fixtures", "rules", "ts112_dataloader_main_process.py")
    uri = await open_and_wait(client, path)
    (diagnostic,) = client.diagnostics[uri]
    assert diagnostic.severity == types.DiagnosticSeverity.Information
    line = pathlib.Path(path).read_text().split("\n")[diagnostic.range.start.line]
    assert line[diagnostic.range.start.character : diagnostic.range.end.character].startswith("DataLoader(train_set")
    close(client, uri)


def fixable(path: str) -> bool:
    from tensorsight.core.rules import analyze

    return any("fix" in f.details for f in analyze(pathlib.Path(path).read_text(), path))


@pytest.mark.parametrize("path", [p for p in RULE_FIXTURES if fixable(p)], ids=os.path.basename)
async def test_quick_fixes_apply_cleanly(client: LanguageClient, path: str):
    """Every offered quick fix, applied as the editor would, leaves valid Python with that finding gone."""
    text = pathlib.Path(path).read_text()
    uri = await open_and_wait(client, path)
    fixable_count = 0
    for diagnostic in list(client.diagnostics[uri]):
        actions = await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=diagnostic.range,
                context=types.CodeActionContext(diagnostics=[diagnostic]),
            )
        )
        mine = [
            a
            for a in actions or []
            if isinstance(a, types.CodeAction) and a.diagnostics and diagnostic in a.diagnostics
        ]
        if not mine:
            continue
        (action,) = mine
        fixable_count += 1
        assert action.kind == types.CodeActionKind.QuickFix and action.is_preferred
        assert action.edit is not None and action.edit.changes is not None
        fixed = apply_edits(text, action.edit.changes[uri])
        ast.parse(fixed)
        before = Counter(str(d.code) for d in client.diagnostics[uri])
        client.diagnostics.pop(uri, None)
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)],
            )
        )
        after = await eventually(lambda: client.diagnostics.get(uri) is not None and [client.diagnostics[uri]])
        remaining = Counter(str(d.code) for d in after[0])
        assert before - remaining == Counter({str(diagnostic.code): 1}), action.title  # exactly that one is gone
        assert not remaining - before  # and nothing new appeared
        # back to the original text for the next diagnostic
        client.diagnostics.pop(uri, None)
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        await eventually(lambda: client.diagnostics.get(uri) is not None)
    assert fixable_count >= 1
    close(client, uri)


async def test_edits_are_debounced_and_reanalysed(client: LanguageClient, tmp_path):
    path = tmp_path / "train.py"
    correct = pathlib.Path(REPO, "tests", "fixtures", "correct_loops", "classic_loop.py").read_text()
    path.write_text(correct)
    uri = await open_and_wait(client, path)
    assert list(client.diagnostics[uri]) == []
    broken = correct.replace("            optimizer.zero_grad()\n", "")
    assert broken != correct
    client.diagnostics.pop(uri, None)
    for version, text in enumerate([correct + "\n", broken + "\n", broken], start=2):  # a burst of keystrokes
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
    await eventually(lambda: client.diagnostics.get(uri), what="TS101 after the edit")
    assert [str(d.code) for d in client.diagnostics[uri]] == ["TS101"]
    close(client, uri)


@pytest.mark.timeout(120)
async def test_bundled_libraries_come_first(tmp_path):
    """With the interpreter's site-packages switched off (-S), the server still runs from the bundled libraries."""
    bundle = tmp_path / "libs"
    bundle.mkdir()
    packages = {"pygls", "lsprotocol", "cattrs", "attrs", "attr", "typing_extensions", "pynvml"}
    for root in site.getsitepackages():
        for entry in pathlib.Path(root).iterdir():
            name = entry.name.removesuffix(".py")
            if name in packages and not (bundle / entry.name).exists():
                (bundle / entry.name).symlink_to(entry)
    config = server_config(bundled_libs=str(bundle), python_flags=["-S"])
    lsp = await config.start()
    try:
        await initialize(lsp)  # type: ignore[arg-type]
        uri = await open_and_wait(lsp, RULE_FIXTURES[0])  # type: ignore[arg-type]
        assert [str(d.code) for d in lsp.diagnostics[uri]] == ["TS101"]  # type: ignore[attr-defined]
        await lsp.shutdown_session()  # type: ignore[attr-defined]
    finally:
        await lsp.stop()
    assert sys.flags.no_site == 0  # the test itself ran with site-packages
