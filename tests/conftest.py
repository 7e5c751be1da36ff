"""Shared test setup: tests/ and pyhelpers/ on sys.path (like the extension's injection), no stray env contract."""

import os
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TESTS)
sys.path.insert(0, os.path.join(os.path.dirname(TESTS), "pyhelpers"))

# A developer's shell must not leak a hub address or options into the programs the tests launch.
for _name in ("TENSORSIGHT_HUB", "TENSORSIGHT_TOKEN", "TENSORSIGHT_OPTIONS"):
    os.environ.pop(_name, None)
