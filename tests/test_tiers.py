"""The tier markers (tests/support/tiers.py): each tier is read from what a test module really imports."""

import os
import sys

from support.paths import REPO
from support.tiers import tiers_by_test, tiers_of


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


MIXED_MODULE = """
import subprocess

import pytest

from support.dap import DebugSession
from tensorsight.core import stats

PROGRAM = "x.py"


def launch():
    return DebugSession.launch(PROGRAM)


@pytest.fixture
def session():
    with launch() as running:
        yield running


def test_pure():
    assert stats


def test_in_a_session(session):
    assert session


def test_through_a_helper():
    with launch():
        pass


def test_a_child():
    subprocess.run(["true"])


class TestGroup:
    def test_method(self):
        launch()
"""


def test_a_module_mixing_pure_and_session_tests_puts_each_test_in_its_own_tiers():
    tiers = tiers_by_test(MIXED_MODULE)
    assert tiers["test_pure"] == set()
    assert tiers["test_in_a_session"] == {"dap", "subprocess"}  # through the fixture it asks for
    assert tiers["test_through_a_helper"] == {"dap", "subprocess"}  # through the module's own helper
    assert tiers["test_a_child"] == {"subprocess"}
    assert tiers["TestGroup"] == {"dap", "subprocess"}


def test_an_autouse_fixture_puts_every_test_of_its_module_in_its_tiers():
    source = (
        "import subprocess\nimport pytest\n\n@pytest.fixture(autouse=True)\ndef built():\n"
        "    subprocess.run(['true'])\n\ndef test_pure():\n    pass\n"
    )
    assert tiers_by_test(source) == {"test_pure": {"subprocess"}}


def test_the_collected_markers_follow_each_test(pytestconfig):
    # this module's own tests read sources only: none of them is in a slow tier
    import subprocess as child

    out = child.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--collect-only",
            "-q",
            "-m",
            "dap",
            "tests/test_tiers.py",
            "tests/agent/debugger/test_debugpy_waits.py",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    selected = [line for line in out.splitlines() if "::" in line]
    assert selected and all("test_debugpy_waits.py" in line for line in selected), out
    # the waits module mixes debug sessions and unit tests of its clock: the unit tests are not in "dap"
    assert not any("RecordingClock" in line or "clock" in line.split("::")[-1] for line in selected), selected
