"""The DAP test harness (tests/support/dap.py) keeps a failed session's logs: debugpy's adapter, launcher and server
logs and pydevd's, in test-output/dap-logs/, named in a note on the failure; a session that passes leaves nothing.
Checked on real debugpy sessions, since a harness that silently drops its logs makes every later failure harder."""

from __future__ import annotations

import os

import pytest

from support.dap import KEPT_LOGS, DebugSession
from support.paths import PROGRAMS

SMOKE = os.path.join(PROGRAMS, "smoke.py")


def _kept() -> set[str]:
    return set(os.listdir(KEPT_LOGS)) if os.path.isdir(KEPT_LOGS) else set()


def test_a_failure_inside_a_session_keeps_its_logs_and_names_them():
    before = _kept()
    with pytest.raises(AssertionError, match="the test's own failure") as failure:
        with DebugSession.launch(SMOKE, options={}) as session:
            assert session.wait_for_exit() == 0
            raise AssertionError("the test's own failure")
    new = _kept() - before
    assert len(new) == 1, new
    folder = os.path.join(KEPT_LOGS, new.pop())
    names = os.listdir(folder)
    assert any(name.startswith("debugpy.adapter") for name in names), names
    assert any("pydevd" in name for name in names), names
    note = "\n".join(getattr(failure.value, "__notes__", []))
    assert folder in note and '"command": "disconnect"' in note


def test_a_session_that_passes_leaves_no_log_behind():
    before = _kept()
    with DebugSession.launch(SMOKE, options={}) as session:
        folder = session.logs.folder if session.logs else ""
        assert os.listdir(folder), "the session logs nothing while it runs"
        assert session.wait_for_exit() == 0
    assert folder and not os.path.exists(folder)
    assert _kept() == before
