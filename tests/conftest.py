"""Shared test setup: tests/ and pyhelpers/ on sys.path (like the extension's injection), no stray env contract."""

import os
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TESTS)
sys.path.insert(0, os.path.join(os.path.dirname(TESTS), "pyhelpers"))

# A developer's shell must not leak a hub address or options into the programs the tests launch.
for _name in ("TENSORSIGHT_HUB", "TENSORSIGHT_TOKEN", "TENSORSIGHT_OPTIONS"):
    os.environ.pop(_name, None)


def pytest_collection_modifyitems(config, items):
    """Mark every test with the tiers of its module (tests/support/tiers.py)."""
    import pytest

    from support.tiers import tiers_of

    by_file: dict[str, set[str]] = {}
    for item in items:
        path = str(item.path)
        if path not in by_file:
            with open(path, encoding="utf-8") as handle:
                by_file[path] = tiers_of(handle.read())
        for tier in sorted(by_file[path]):
            item.add_marker(getattr(pytest.mark, tier))
