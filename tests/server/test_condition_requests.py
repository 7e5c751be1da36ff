"""``tensorsight/validateCondition`` and ``tensorsight/suggestConditions`` through the real server, backed by the
breakpoint feature's pure helpers (tensorsight.core.conditions).
"""

from __future__ import annotations

import pathlib

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
