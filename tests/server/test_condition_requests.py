"""``tensorsight/validateCondition`` and ``tensorsight/suggestConditions`` through the real server, backed by the
breakpoint feature's pure helpers (tensorsight.core.conditions).
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from support.lsp import close, initialize, open_and_wait, server_config

pytestmark = pytest.mark.asyncio(loop_scope="module")

SOURCE = """import torch

def train(model, batches):
    for step, batch in enumerate(batches):
        loss = model(batch).sum()
        loss.backward()
"""


@pytest_lsp.fixture(config=server_config(), scope="module")
async def client(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_undefined_names_in_a_condition_are_reported(client: LanguageClient, tmp_path: pathlib.Path):
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    uri = await open_and_wait(client, path)
    result = await client.protocol.send_request_async(
        "tensorsight/validateCondition",
        {"uri": uri, "line": 5, "condition": "tensorsight.nan(loss) or lose > 3"},  # 0-based: `loss.backward()`
    )
    close(client, uri)
    assert result.available is True
    assert list(result.undefinedNames) == ["lose"]
    assert "lose" in result.message and "line 6" in result.message


async def test_suggestions_for_a_name(client: LanguageClient):
    result = await client.protocol.send_request_async("tensorsight/suggestConditions", {"name": "loss"})
    assert result and all("loss" in item["condition"] for item in result)
    assert all(item["label"] and item["description"] for item in result)


async def test_suggestions_are_about_the_receiver_of_a_method_and_none_for_a_module(
    client: LanguageClient, tmp_path: pathlib.Path
):
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    uri = await open_and_wait(client, path)
    on_method = await client.protocol.send_request_async(
        "tensorsight/suggestConditions", {"name": "loss.backward", "uri": uri, "line": 5}
    )
    on_module = await client.protocol.send_request_async(
        "tensorsight/suggestConditions", {"name": "torch", "uri": uri, "line": 0}
    )
    close(client, uri)
    conditions = [item["condition"] for item in on_method]
    assert "tensorsight.nonfinite(loss)" in conditions
    assert not any("backward" in c for c in conditions)
    assert on_module == []


async def validate(client: LanguageClient, uri: str, condition: str, line: int = 5) -> dict[str, Any]:
    answer = await client.protocol.send_request_async(
        "tensorsight/validateCondition", {"uri": uri, "line": line, "condition": condition}
    )
    return answer._asdict() if hasattr(answer, "_asdict") else dict(answer)


async def test_a_deeply_nested_condition_gets_a_clear_answer_not_an_internal_error(
    client: LanguageClient, tmp_path: pathlib.Path
):
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    uri = await open_and_wait(client, path)
    try:
        answers = [
            await validate(client, uri, condition)
            for condition in ("not " * 5000 + "loss", "-" * 50_000 + "loss", "loss" + "[0]" * 5000)
        ]
        fine = await validate(client, uri, "tensorsight.nan(loss)")  # the server is still answering
    finally:
        close(client, uri)
    for answer in answers:
        assert answer["syntaxError"] and "nested too deeply" in answer["syntaxError"], answer
        assert "nested too deeply" in answer["message"] and "RecursionError" not in answer["message"]
    assert fine["message"] == "" and fine["sideEffects"] == []


@pytest.mark.parametrize(
    ("condition", "named"),
    [
        ("loss.add_(1) > 0", "loss.add_"),
        ("tensorsight.nan(loss.mul_(2))", "loss.mul_"),
        ("torch.add(loss, 1, out=loss) > 0", "out="),
        ("(n := loss.item()) > 3", "n :="),
        ("print(loss) or tensorsight.nan(loss)", "print"),
        ("model(batch).sum() > 0", "model"),
    ],
)
async def test_a_condition_that_changes_the_program_is_warned_about(
    client: LanguageClient, tmp_path: pathlib.Path, condition: str, named: str
):
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    uri = await open_and_wait(client, path)
    try:
        answer = await validate(client, uri, condition)
    finally:
        close(client, uri)
    assert answer["undefinedNames"] == [] and answer["syntaxError"] is None
    assert any(named in effect for effect in answer["sideEffects"]), answer
    assert "may change the program" in answer["message"] and named in answer["message"]


async def test_read_only_conditions_get_no_warning(client: LanguageClient, tmp_path: pathlib.Path):
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    uri = await open_and_wait(client, path)
    try:
        answers = [
            await validate(client, uri, condition)
            for condition in (
                "tensorsight.nan(loss) or loss.item() > 3",
                "not tensorsight.shape_is(batch, (None, 10)) and len(batch) > 0",
                "torch.isnan(loss).any() or loss.detach().abs().max() > 1e4",
                "tensorsight.grad_norm(model) > 1e3 and step % 10 == 0",
            )
        ]
    finally:
        close(client, uri)
    for answer in answers:
        assert answer["message"] == "" and answer["sideEffects"] == [], answer


async def test_a_statement_is_named_as_such(client: LanguageClient, tmp_path: pathlib.Path):
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    uri = await open_and_wait(client, path)
    try:
        assigned = await validate(client, uri, "loss = loss * 0")
        deleted = await validate(client, uri, "del loss")
    finally:
        close(client, uri)
    assert "assignment is a statement" in assigned["syntaxError"]
    assert "`del` is a statement" in deleted["syntaxError"]
