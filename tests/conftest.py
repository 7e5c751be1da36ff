"""Shared test setup: tests/ and pyhelpers/ on sys.path (like the extension's injection), no stray env contract."""

import os
import sys

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TESTS)
sys.path.insert(0, os.path.join(os.path.dirname(TESTS), "pyhelpers"))

# A developer's shell must not leak a hub address or options into the programs the tests launch.
for _name in ("TENSORSIGHT_HUB", "TENSORSIGHT_TOKEN", "TENSORSIGHT_OPTIONS"):
    os.environ.pop(_name, None)


@pytest.fixture(autouse=True)
def _each_test_is_a_new_debugger_request():
    """Summaries share one time budget per debugger request, told apart by a pause between calls; tests in one
    process follow each other with no pause, so each test starts a request of its own."""
    budget = sys.modules.get("tensorsight.agent.display.budget")
    if budget is not None:
        budget.CLOCK.new_request()
    yield
