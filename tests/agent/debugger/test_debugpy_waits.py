"""The waits debugpy spends on a debugged run, cut by the agent (agent.debugger.link, shutdown, forked_start,
environment_report, pydevd_clock): checked in real debugpy sessions on a program with two DataLoader workers, and
their decisions on pydevd's and debugpy's tables one by one.

What each real session shows:
- the process's link to the adapter, and each forked worker's, sends without Nagle's delay;
- a worker forked while a breakpoint is set waits for its session, as pydevd has it;
- with nothing to stop at, the workers run without the editor attaching them (a client that never attaches them
  still sees the program end), and every process ends through the agent's disposal: pydevd's mutual half-second wait
  never happens (read from pydevd's own debug logs).
"""

from __future__ import annotations

import pathlib
import re
import socket
import threading
import types
from typing import Any

import pytest

from support.dap import DebugSession
from support.dap_multi import MultiProcessSession
from support.paths import marked_lines

torch = pytest.importorskip("torch")

PROGRAMS = pathlib.Path(__file__).parent / "programs"
LOADER_WORKERS = str(PROGRAMS / "loader_workers.py")
OPTIONS = {"breakOnNonFinite": False, "observeShapes": False, "checkLeakage": False, "measure": False}
SLOW = 240.0
NODELAY = (
    "__import__('pydevd').get_global_debugger().writer.sock.getsockopt("
    "__import__('socket').IPPROTO_TCP, __import__('socket').TCP_NODELAY)"
)
STARTS_WITHOUT_WAITING = (
    "__import__('tensorsight.agent.debugger.forked_start', fromlist=['_']).starts_without_waiting()"
)


# ---- real sessions ---------------------------------------------------------------------------------------------------


@pytest.mark.timeout(400)
def test_the_process_and_its_workers_send_without_delay_and_workers_wait_when_a_breakpoint_is_set():
    lines = marked_lines(LOADER_WORKERS)
    with MultiProcessSession.launch(
        program=LOADER_WORKERS,
        cwd=str(PROGRAMS),
        breakpoints=[(LOADER_WORKERS, lines["in-loop"], None)],
        options=OPTIONS,
        exception_filters=["uncaught"],
        timeout=SLOW,
    ) as job:
        workers = job.wait_for_workers(2, timeout=SLOW)
        root = job.root
        stop = root.wait_for_stop(timeout=SLOW)
        frame_id = root.top_frame_id(stop)
        assert root.evaluate(NODELAY, frame_id)["result"] == "1"
        for worker in workers:
            assert worker.evaluate(NODELAY)["result"] == "1", f"worker {worker.pid}"
            # the parent had a breakpoint when it forked: the worker waited for its session, as pydevd has it
            assert worker.evaluate(STARTS_WITHOUT_WAITING)["result"] == "0", f"worker {worker.pid}"
        root.set_breakpoints(LOADER_WORKERS, [])
        root.continue_(stop["threadId"])
        assert root.wait_for_exit(timeout=SLOW) == 0
        assert "total 4032" in root.stdout()


@pytest.mark.timing  # bounds a wall time: scripts/test.sh runs it with nothing beside it
@pytest.mark.timeout(400)
def test_with_nothing_to_stop_at_workers_run_unattached_and_every_process_ends_without_pydevds_waits(tmp_path):
    logs = tmp_path / "pydevd"
    logs.mkdir()
    env = {"PYDEVD_DEBUG": "1", "PYDEVD_DEBUG_FILE": str(logs / "pydevd.log")}
    # DebugSession never attaches the children debugpy reports: stock pydevd keeps them waiting for it forever
    with DebugSession.launch(LOADER_WORKERS, options=OPTIONS, env=env, timeout=SLOW) as session:
        assert session.wait_for_exit(timeout=SLOW) == 0
        assert "total 4032" in session.stdout()
    texts = {path.name: path.read_text(errors="replace") for path in logs.glob("pydevd*.log")}
    assert len(texts) == 3, sorted(texts)  # the process and its two workers
    for name, text in texts.items():
        disposals = [line for line in text.splitlines() if "dispose_and_kill_all_pydevd_threads (called from" in line]
        assert disposals, name
        # the first disposal is the agent's, at the interpreter's shutdown, not CheckAliveThread's 0.2 s look
        assert "tensorsight" in disposals[0] and "agent" in disposals[0], (name, disposals[0])
        # the reader, seeing the adapter close the socket, no longer waits on the first disposal's wait: from the
        # first disposal to the log's end takes less than pydevd's half-second timeout. (A late second caller, such
        # as CheckAliveThread woken by the disposal's kill, may still log "already disposed - wait": once the first
        # wait is over, its wait returns at once, so only the time tells the mutual wait apart.)
        assert seconds_after(text, disposals[0]) < 0.4, (name, text[text.index(disposals[0]) :])


def seconds_after(log: str, line: str) -> float:
    """The time pydevd's debug log spent after `line`: each of its lines opens with the seconds since the previous."""
    after = log[log.index(line) + len(line) :].splitlines()
    return sum(float(entry.split("s - ", 1)[0]) for entry in after if re.match(r"^\d+\.\d+s - ", entry))


# ---- pydevd_clock ----------------------------------------------------------------------------------------------------


class RecordingClock:
    """A stand-in for the ``time`` module: records the sleeps it is asked for, per thread."""

    def __init__(self) -> None:
        self.sleeps: list[tuple[int, float]] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append((threading.get_ident(), seconds))

    def monotonic(self) -> float:
        return 12.5


def pydevd_like(source: str, clock: Any) -> tuple[Any, dict[str, Any]]:
    """A function defined in a module namespace whose global ``time`` is ``clock`` (as pydevd's functions are)."""
    namespace: dict[str, Any] = {"time": clock, "threading": threading}
    exec(source, namespace)  # a test fixture's own source
    return namespace["target"], namespace


def test_call_with_sleeps_shortens_this_threads_sleeps_only_and_puts_the_module_back():
    from tensorsight.agent.debugger.pydevd_clock import ShortSleepClock, call_with_sleeps

    clock = RecordingClock()
    target, namespace = pydevd_like(
        "def target(x):\n"
        "    time.sleep(0.1)\n"
        "    other = threading.Thread(target=time.sleep, args=(0.3,))\n"
        "    other.start(); other.join()\n"
        "    return x, time.monotonic(), type(time).__name__\n",
        clock,
    )
    result = call_with_sleeps(target, lambda seconds: seconds / 10, "x")
    assert result == ("x", 12.5, ShortSleepClock.__name__)
    me = threading.get_ident()
    assert [seconds for thread, seconds in clock.sleeps if thread == me] == [pytest.approx(0.01)]
    assert [seconds for thread, seconds in clock.sleeps if thread != me] == [0.3]  # another thread: untouched
    assert namespace["time"] is clock

    failing, namespace = pydevd_like("def target():\n    raise KeyError('boom')\n", clock)
    with pytest.raises(KeyError):
        call_with_sleeps(failing, lambda seconds: 0.0)
    assert namespace["time"] is clock


# ---- link ------------------------------------------------------------------------------------------------------------


def test_the_link_wrapper_sets_nodelay_and_skips_the_start_pause():
    from tensorsight.agent.debugger.link import _without_delay, send_without_delay

    clock = RecordingClock()
    original, namespace = pydevd_like(
        "def target(self, sock, terminate_on_socket_close=True):\n"
        "    time.sleep(0.1)\n"
        "    return sock, terminate_on_socket_close\n",
        clock,
    )
    wrapped = _without_delay(original)
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        peer, _ = server.accept()
        try:
            assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
            assert wrapped(object(), client, terminate_on_socket_close=False) == (client, False)
            assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        finally:
            client.close()
            peer.close()
    assert clock.sleeps == []  # the pause after starting the threads was skipped
    assert namespace["time"] is clock
    left, right = socket.socketpair()
    with left, right:
        assert send_without_delay(left) is False  # not TCP: left as it is
    assert send_without_delay(None) is False


# ---- shutdown --------------------------------------------------------------------------------------------------------


def test_other_user_threads_alive_leaves_out_the_calling_thread_and_daemons():
    from tensorsight.agent.debugger.shutdown import other_user_threads_alive

    assert other_user_threads_alive() is False
    release = threading.Event()
    daemon = threading.Thread(target=release.wait, daemon=True)
    daemon.start()
    assert other_user_threads_alive() is False
    user = threading.Thread(target=release.wait)
    user.start()
    try:
        assert other_user_threads_alive() is True
    finally:
        release.set()
        user.join()
        daemon.join()
    assert other_user_threads_alive() is False


class FakeDebugger:
    def __init__(self, disposed: bool) -> None:
        self.pydb_disposed = disposed
        self.calls: list[dict[str, Any]] = []

    def dispose_and_kill_all_pydevd_threads(self, **kwargs: Any) -> None:
        self.calls.append(kwargs)


@pytest.mark.parametrize(
    ("disposed", "terminates", "expected_calls", "original_runs"),
    [
        (True, True, [{"wait": False}], False),  # already being disposed: no wait on the first disposal's wait
        (False, True, [], True),  # the adapter closed first (Stop): pydevd's own path
        (True, False, [], True),  # a reader told not to terminate the session: pydevd's own path
    ],
)
def test_the_reader_asks_for_the_disposal_without_waiting_only_when_it_is_under_way(
    disposed, terminates, expected_calls, original_runs
):
    from tensorsight.agent.debugger.shutdown import _without_mutual_wait

    ran: list[Any] = []
    wrapped = _without_mutual_wait(lambda reader: ran.append(reader))
    reader = types.SimpleNamespace(py_db=FakeDebugger(disposed), _ReaderThread__terminate_on_socket_close=terminates)
    wrapped(reader)
    assert reader.py_db.calls == expected_calls
    assert ran == ([reader] if original_runs else [])


# ---- forked_start ----------------------------------------------------------------------------------------------------


def pydevd_tables(**changes: Any) -> types.SimpleNamespace:
    tables: dict[str, Any] = {
        "function_breakpoint_name_to_breakpoint": {},
        "break_on_caught_exceptions": {},
        "break_on_user_uncaught_exceptions": {},
        "has_plugin_line_breaks": False,
        "has_plugin_exception_breaks": False,
        "breakpoints": {"/work/train.py": {}},
    }
    tables.update(changes)
    return types.SimpleNamespace(**tables)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, True),
        ({"breakpoints": {"/work/data.py": {12: object()}}}, False),  # a line breakpoint anywhere: the worker waits
        ({"function_breakpoint_name_to_breakpoint": {"collate": object()}}, False),
        ({"break_on_caught_exceptions": {"ValueError": object()}}, False),
        ({"break_on_user_uncaught_exceptions": {"BaseException": object()}}, False),
        ({"has_plugin_line_breaks": True}, False),
        ({"breakpoints": None}, False),  # unreadable: the worker waits, as pydevd has it
    ],
)
def test_a_child_starts_at_once_only_when_the_parent_has_nothing_to_stop_at(changes, expected):
    from tensorsight.agent.debugger.forked_start import nothing_could_stop_a_child

    assert nothing_could_stop_a_child(pydevd_tables(**changes)) is expected


# ---- environment_report ----------------------------------------------------------------------------------------------


def test_the_agent_quiets_the_report_of_the_debugged_process(monkeypatch):
    from debugpy.common import log

    from tensorsight.agent.debugger import environment_report

    monkeypatch.setattr(log, "describe_environment", log.describe_environment)  # put back after the test
    environment_report.arm()
    assert getattr(log.describe_environment, "__tensorsight_quiet_report__", False) is True


# ---- debugpy_start: the adapter and the launcher as a "Debug Training" launch starts them ---------------------------


@pytest.mark.timeout(400)
def test_the_adapter_and_launcher_started_as_the_extension_starts_them_run_the_program_and_keep_a_requested_log(
    tmp_path,
):
    logs = tmp_path / "debugpy-logs"
    env = {"DEBUGPY_LOG_DIR": str(logs)}
    lines = marked_lines(LOADER_WORKERS)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DEBUGPY_LOG_DIR", str(logs))  # the adapter's own log, as a user's logToFile asks for it
        with MultiProcessSession.launch(
            program=LOADER_WORKERS,
            cwd=str(PROGRAMS),
            breakpoints=[(LOADER_WORKERS, lines["in-loop"], None)],
            options=OPTIONS,
            env=env,
            timeout=SLOW,
            as_the_extension=True,
        ) as job:
            job.wait_for_workers(2, timeout=SLOW)
            root = job.root
            stop = root.wait_for_stop(timeout=SLOW)
            frame = root.top_frame(stop)
            assert (frame["source"]["path"], frame["line"]) == (LOADER_WORKERS, lines["in-loop"])
            # the program started through debugpy_start/debugpy_launcher.py, which pydevd hides like its own files
            shown = [item.get("source", {}).get("path", "") for item in root.stack(stop["threadId"])]
            assert not [path for path in shown if "debugpy_start" in path], shown
            assert root.evaluate("__import__('sys').argv[0]", frame["id"])["result"] == repr(LOADER_WORKERS)
            root.set_breakpoints(LOADER_WORKERS, [])
            root.continue_(stop["threadId"])
            assert root.wait_for_exit(timeout=SLOW) == 0
            assert "total 4032" in root.stdout()
    texts = {path.name: path.read_text(errors="replace") for path in logs.glob("debugpy.*.log")}
    adapter = [text for name, text in texts.items() if name.startswith("debugpy.adapter")]
    launcher = [text for name, text in texts.items() if name.startswith("debugpy.launcher")]
    assert len(adapter) == 1 and len(launcher) == 1, sorted(texts)
    # a log was asked for: the reports are written as before, installed packages included
    assert "debugpy.adapter startup environment" in adapter[0] and "Installed packages" in adapter[0]
    assert "debugpy.launcher startup environment" in launcher[0] and "Installed packages" in launcher[0]
    # the launcher ran from our folder, and started the program through our start file in front of debugpy's
    assert "debugpy_start" in launcher[0]
    assert "debugpy_launcher.py" in launcher[0]
    servers = [text for name, text in texts.items() if name.startswith("debugpy.server")]
    assert servers and all("Installed packages" in text for text in servers)


def test_the_launcher_puts_our_start_in_front_of_debugpys_folder_only():
    from tensorsight.debugpy_start import debuggee_command

    command = ["/py", "-X", "frozen_modules=off", "/libs/debugpy", "--connect", "127.0.0.1:5", "train.py"]
    assert debuggee_command(command, "/libs/debugpy", "/h/debugpy_launcher.py") == [
        "/py",
        "-X",
        "frozen_modules=off",
        "/h/debugpy_launcher.py",
        "/libs/debugpy",
        "--connect",
        "127.0.0.1:5",
        "train.py",
    ]
    run_without_debugging = ["/py", "train.py", "/libs/debugpy"]
    assert debuggee_command(run_without_debugging, "/libs/debugpy", "/h/debugpy_launcher.py") == run_without_debugging


def test_without_a_log_the_environment_report_is_not_built(monkeypatch):
    from debugpy.common import log

    from tensorsight.debugpy_start import quiet_environment_report

    built: list[str] = []
    monkeypatch.setattr(log, "get_environment_description", lambda header: built.append(header) or header)
    monkeypatch.setattr(log, "describe_environment", log.describe_environment)  # put back after the test
    assert quiet_environment_report() is True
    monkeypatch.setattr(log, "_levels", frozenset({"warning", "error"}))
    log.describe_environment("Initial environment:")
    assert built == []
    monkeypatch.setattr(log, "_levels", frozenset({"info", "warning", "error"}))
    log.describe_environment("Initial environment:")
    assert built == ["Initial environment:"]
    assert quiet_environment_report() is True  # a second call wraps nothing twice
    log.describe_environment("again")
    assert built == ["Initial environment:", "again"]
