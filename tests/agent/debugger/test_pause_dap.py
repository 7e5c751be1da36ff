"""agent.pause (pydevd's private API, wrapped in one module) against a real debugpy session: the stop lands in the
caller's frame at its line with our title and reason, extra values show in Variables, stepping works afterwards,
and a stop can be shown on an earlier line of a still-running frame. Under Python 3.12+ (scripts/test.sh runs this
module there too) pydevd traces through sys.monitoring, a path of its own."""

import sys

import pytest

from support.dap import DebugSession
from support.paths import marked_lines, program
from tensorsight.agent.debugger import pause
from tensorsight.agent.runtime.user_code import is_agent_file

pytestmark = pytest.mark.numpy_only  # also run under Python 3.10, 3.12 and 3.13 (scripts/test.sh)


def test_stop_in_frame_in_a_real_session():
    path = program("pause_in_frame.py")
    lines = marked_lines(path)
    with DebugSession.launch(path, timeout=60) as session:
        stop = session.wait_for_stop()
        assert (stop["reason"], stop["text"]) == ("exception", "Stopped here")
        assert stop["description"] == "Stopped here: a reason for the editor"
        frame = session.top_frame(stop)
        assert (frame["name"], frame["line"], frame["source"]["path"]) == ("train", lines["stop"], path)
        variables = session.locals(frame["id"])
        assert variables["total"]["value"] == "10"
        assert variables["(extra)"]["value"] == "[1, 2]"
        info = session.request("exceptionInfo", {"threadId": stop["threadId"]})
        assert info["exceptionId"] == "Stopped here"

        session.request("next", {"threadId": stop["threadId"]})  # stepping continues in the user's frame
        stop = session.wait_for_stop()
        assert stop["reason"] == "step" and session.top_frame(stop)["line"] == lines["next"]
        after = session.locals(session.top_frame_id(stop))
        if sys.version_info[:3] == (3, 13, 0):  # its f_locals proxy cannot remove a name (fixed in 3.13.1)
            assert after["(extra)"]["value"] == "None", "the extra value is let go after its stop"
        else:
            assert "(extra)" not in after, "the extra entry lasts for its stop only"

        session.continue_(stop["threadId"])
        stop = session.wait_for_stop()
        assert stop["text"] == "Shown on an earlier line"
        assert session.top_frame(stop)["line"] == lines["shown"]
        session.continue_(stop["threadId"])
        assert session.wait_for_exit() == 0
        assert "results (True, True, 11)" in session.stdout()


def test_without_a_debugger_nothing_stops():
    assert pause.stop_in_frame(sys._getframe(), "title", "reason") is False
    assert pause.thread_held_by_debugger() is False
    assert pause.hide_agent_files() is False
    assert is_agent_file(pause.__file__) and not is_agent_file(__file__)
