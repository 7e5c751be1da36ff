"""agent.debugger.threads and agent.debugger.breakpoints (pydevd's private API, wrapped) against a real debugpy
session: a hidden agent thread is not listed and keeps running while the program is held, it sees the held thread as
stopped, and line breakpoints set after ``drop_line_breakpoints`` never stop (the ``ranks`` option relies on it)."""

import sys
import threading
import time

from support.dap import DebugSession
from support.paths import marked_lines, program
from tensorsight.agent.debugger import breakpoints, threads


def test_hidden_thread_suspend_detection_and_dropped_breakpoints_in_a_real_session():
    path = program("debugger_threads.py")
    lines = marked_lines(path)
    with DebugSession.launch(path, breakpoints=[(path, lines["held"], None)], timeout=60) as session:
        stop = session.wait_for_stop()
        assert session.top_frame(stop)["line"] == lines["held"]
        names = {t["name"] for t in session.request("threads")["threads"]}
        assert "user-visible-thread" in names and "tensorsight-test-watcher" not in names, names
        # the watcher samples every 20 ms: the stop lasts until it has seen the main thread held (a held thread
        # answers evaluations from inside pydevd's suspend loop), however quickly this client would resume
        deadline = time.monotonic() + 10
        while session.evaluate("any(samples)", session.top_frame_id(stop))["result"] != "True":
            assert time.monotonic() < deadline, "the hidden watcher never saw the main thread held"
            time.sleep(0.02)
        # set while line breakpoints are dropped: pydevd keeps none, the editor still sees the breakpoint verified
        (placed,) = session.set_breakpoints(path, [(lines["dropped"], None)])
        assert placed["verified"]
        session.continue_(stop["threadId"])
        assert session.wait_for_exit() == 0  # the "dropped" breakpoint never stopped the program
        # not held before the stop, seen held during it (the watcher ran meanwhile), running again after it
        assert "results False True False True 2" in session.stdout()


def test_without_a_debugger():
    assert breakpoints.running_pydevd_class() is None
    assert breakpoints.drop_line_breakpoints() is False
    assert threads.held_by_debugger(sys._getframe()) is False and threads.held_by_debugger(None) is False
    thread = threads.hide_from_debugger(threading.Thread(target=lambda: None))
    assert thread.is_pydev_daemon_thread and thread.pydev_do_not_trace  # type: ignore[attr-defined]
