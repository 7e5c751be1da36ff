"""The DAP test harness (tests/support/dap.py) keeps a failed session's logs: debugpy's adapter, launcher and server
logs and pydevd's, in test-output/dap-logs/, named in a note on the failure; a session that passes leaves nothing.
Checked on real debugpy sessions, since a harness that silently drops its logs makes every later failure harder."""

from __future__ import annotations

import os

import pytest

from support.dap import KEPT_LOGS, DebugSession
from support.paths import PROGRAMS

SMOKE = os.path.join(PROGRAMS, "smoke.py")


def test_a_failure_inside_a_session_keeps_its_logs_and_names_them():
    with pytest.raises(AssertionError, match="the test's own failure") as failure:
        with DebugSession.launch(SMOKE, options={}) as session:
            assert session.wait_for_exit() == 0
            raise AssertionError("the test's own failure")
    # Other tiers run beside this one and may keep logs of their own failures in the same folder: look at ours only.
    assert session.logs is not None and session.logs.kept is not None
    folder = session.logs.kept
    assert os.path.dirname(folder) == KEPT_LOGS and not os.path.exists(session.logs.folder)
    names = os.listdir(folder)
    assert any(name.startswith("debugpy.adapter") for name in names), names
    assert any("pydevd" in name for name in names), names
    note = "\n".join(getattr(failure.value, "__notes__", []))
    assert folder in note and '"command": "disconnect"' in note


def test_a_session_that_passes_leaves_no_log_behind():
    with DebugSession.launch(SMOKE, options={}) as session:
        folder = session.logs.folder if session.logs else ""
        assert os.listdir(folder), "the session logs nothing while it runs"
        assert session.wait_for_exit() == 0
    assert folder and not os.path.exists(folder)
    assert session.logs is not None and session.logs.kept is None
