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


def _imports_a_missing_module_at_top(path: Path) -> bool:
    """True when a module imports, at its top level, a package this interpreter lacks (torch, or a test dependency of
    the torch tier such as tensorboard or line_profiler), so that merely collecting it would fail."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return False
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return any(importlib.util.find_spec(name) is None for name in names)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Without torch (the numpy-only tiers), test modules that need a missing package at the top are not collected:
    the tiers select with ``-m numpy_only``, but pytest imports every module before it reads markers. With torch
    nothing is skipped this way, so a missing test dependency of the main tier still fails loudly."""
    if _HAS_TORCH:
        return None
    if collection_path.is_dir():  # a folder whose conftest needs the package is left out whole
        conftest = collection_path / "conftest.py"
        return True if conftest.is_file() and _imports_a_missing_module_at_top(conftest) else None
    if collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    return True if _imports_a_missing_module_at_top(collection_path) else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test with the tiers of what it uses (tests/support/tiers.py); a test the reading cannot place (one
    made by a helper outside the module's top level) gets its whole module's tiers."""
    from support.tiers import tiers_by_test, tiers_of

    by_file: dict[str, tuple[dict[str, set[str]], set[str]]] = {}
    for item in items:
        path = str(item.path)
        if path not in by_file:
            with open(path, encoding="utf-8") as handle:
                source = handle.read()
            by_file[path] = (tiers_by_test(source), tiers_of(source))
        per_test, whole_module = by_file[path]
        top = item.cls.__name__ if item.cls is not None else getattr(item, "originalname", item.name)
        for tier in sorted(per_test.get(top, whole_module)):
            item.add_marker(getattr(pytest.mark, tier))


@pytest.fixture(autouse=True)
def _each_test_is_a_new_debugger_request():
    """Summaries share one time budget per debugger request, told apart by a pause between calls; tests in one
    process follow each other with no pause, so each test starts a request of its own."""
    budget = sys.modules.get("tensorsight.agent.display.budget")
    if budget is not None:
        budget.CLOCK.new_request()
    yield
