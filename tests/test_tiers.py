"""The tier markers (tests/support/tiers.py): each tier is read from what a test module really imports."""

import os

from support.paths import REPO
from support.tiers import tiers_of


def _tiers(relative: str) -> set[str]:
    with open(os.path.join(REPO, relative), encoding="utf-8") as handle:
        return tiers_of(handle.read())


def test_a_debugpy_session_test_is_dap_and_subprocess():
    assert _tiers("tests/agent/display/test_variables.py") == {"dap", "subprocess"}


def test_a_language_server_test_is_lsp():
    assert "lsp" in _tiers("tests/server/test_diagnostics.py")


def test_pure_core_tests_are_in_no_slow_tier():
    assert _tiers("tests/core/test_stats.py") == set()


def test_function_level_imports_count():
    source = "def test_x():\n    import subprocess\n    subprocess.run(['true'])\n"
    assert tiers_of(source) == {"subprocess"}
    assert tiers_of("from support import dap\n") == {"dap", "subprocess"}
