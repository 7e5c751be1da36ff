"""The real language server over stdio, fed by a real run of the shipped examples under the agent: each inlay hint and
hover shows the value its line assigned (the loss a user function returns, the batch a DataLoader yields), and a line
that assigns a Python number shows none.
"""

from __future__ import annotations

import pathlib

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from support.lsp import close, doctor_under_hub, initialize, open_and_wait, server_config
from support.paths import example

pytestmark = pytest.mark.asyncio(loop_scope="module")

OPTIONS = {"observeShapes": True, "measure": False, "checkLeakage": False}


@pytest_lsp.fixture(config=server_config(), scope="module")
async def client(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


def line_index(path: str, statement: str) -> int:
    """0-based line of the one line of ``path`` whose stripped text is ``statement``."""
    (index,) = [n for n, text in enumerate(pathlib.Path(path).read_text().split("\n")) if text.strip() == statement]
    return index


async def hints_by_line(client: LanguageClient, uri: str) -> dict[int, list[str]]:
    found = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=200, character=0)),
        )
    )
    out: dict[int, list[str]] = {}
    for hint in found or []:
        out.setdefault(hint.position.line, []).append(str(hint.label))
    return out


async def hover_text(client: LanguageClient, uri: str, line: int, character: int) -> str | None:
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character)
        )
    )
    return None if hover is None else hover.contents.value  # type: ignore[union-attr]


@pytest.mark.timeout(300)
async def test_the_loss_a_user_function_returns(client: LanguageClient):
    path = example("nan_log_zero.py")
    uri = await open_and_wait(client, path)
    await doctor_under_hub(client, "nan-log-zero", path, OPTIONS)
    hints = await hints_by_line(client, uri)
    loss = line_index(path, "loss = bce(p, labels[batch])")
    assert hints[loss] == [": f32[]"]  # not labels[batch]'s f32[64]
    text = await hover_text(client, uri, loss, 5)  # on `loss`
    assert text is not None and "`loss` at step" in text and "`f32[]`" in text and "f32[64]" not in text
    close(client, uri)


@pytest.mark.timeout(300)
async def test_the_loader_batch_and_no_hint_for_a_python_int(client: LanguageClient):
    path = example("correct_training.py")
    uri = await open_and_wait(client, path)
    await doctor_under_hub(client, "correct-training", path, OPTIONS)
    hints = await hints_by_line(client, uri)
    loop = line_index(path, "for xb, yb in train_loader:")
    assert hints[loop] == ["f32[64, 20], i64[64]"]  # the batch, not the sampler's f32[0], i64[0]
    source = pathlib.Path(path).read_text().split("\n")
    text = await hover_text(client, uri, loop, source[loop].index("yb"))
    assert text is not None and "`yb`" in text and "`i64[64]`" in text and "f32[64, 20]" not in text
    correct = line_index(path, "correct += (model(xb).argmax(dim=1) == yb).sum().item()")
    assert correct not in hints  # `correct` is a Python int
    assert await hover_text(client, uri, correct, source[correct].index("correct")) is None
    close(client, uri)
