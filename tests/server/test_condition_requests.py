"""``tensorsight/validateCondition`` and ``tensorsight/suggestConditions`` through the real server, backed by the
breakpoint feature's pure helpers (tensorsight.core.conditions, issue 3) when the build has them.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from support.lsp import close, initialize, open_and_wait, server_config
from tensorsight.server import server as server_module

pytestmark = pytest.mark.asyncio(loop_scope="module")

HAS_CONDITIONS = importlib.util.find_spec("tensorsight.core.conditions") is not None

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
    if not HAS_CONDITIONS:
        assert result.undefinedNames == [] and result.available is False
        pytest.skip("tensorsight.core.conditions (issue 3) is not in this build: the request answers 'unavailable'")
    assert result.available is True
    assert list(result.undefinedNames) == ["lose"]
    assert "lose" in result.message and "line 6" in result.message


async def test_suggestions_for_a_name(client: LanguageClient):
    result = await client.protocol.send_request_async("tensorsight/suggestConditions", {"name": "loss"})
    if not HAS_CONDITIONS:
        assert list(result) == []
        pytest.skip("tensorsight.core.conditions (issue 3) is not in this build")
    assert result and all("loss" in item["condition"] for item in result)
    assert all(item["label"] and item["description"] for item in result)


@pytest.mark.asyncio(loop_scope="module")
async def test_a_build_without_the_conditions_module_degrades_cleanly(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorsight.core.conditions", None)  # import now raises ImportError
    assert server_module._conditions_module() is None
