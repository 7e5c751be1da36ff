"""Shared test setup: tests/ and pyhelpers/ on sys.path (like the extension's injection), no stray env contract, and
the collection rule of the numpy-only tiers."""

import ast
import importlib.util
import os
import sys
from pathlib import Path

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TESTS)
sys.path.insert(0, os.path.join(os.path.dirname(TESTS), "pyhelpers"))

# A developer's shell must not leak a hub address or options into the programs the tests launch.
for _name in ("TENSORSIGHT_HUB", "TENSORSIGHT_TOKEN", "TENSORSIGHT_OPTIONS"):
    os.environ.pop(_name, None)


# ---- numpy-only tiers (scripts/test.sh runs ``-m numpy_only`` under Python versions that have no torch) -------------

# find_spec, not import: the test process must not import torch just to learn whether it could
_HAS_TORCH = importlib.util.find_spec("torch") is not None


def _imports_torch_at_top(path: Path) -> bool:
    """True when a module imports torch at its top level, so that merely collecting it needs torch."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return False
    for node in tree.body:
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "torch" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch":
            return True
    return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Without torch, test modules that import it at the top are not collected (the numpy-only tiers select with
    ``-m numpy_only``, but pytest imports every module before it reads markers)."""
    if _HAS_TORCH or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    return True if _imports_torch_at_top(collection_path) else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test with the tiers of its module (tests/support/tiers.py)."""
    from support.tiers import tiers_of

    by_file: dict[str, set[str]] = {}
    for item in items:
        path = str(item.path)
        if path not in by_file:
            with open(path, encoding="utf-8") as handle:
                by_file[path] = tiers_of(handle.read())
        for tier in sorted(by_file[path]):
            item.add_marker(getattr(pytest.mark, tier))


@pytest.fixture(autouse=True)
def _each_test_is_a_new_debugger_request():
    """Summaries share one time budget per debugger request, told apart by a pause between calls; tests in one
    process follow each other with no pause, so each test starts a request of its own."""
    budget = sys.modules.get("tensorsight.agent.display.budget")
    if budget is not None:
        budget.CLOCK.new_request()
    yield
