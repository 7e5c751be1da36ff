"""Stop the debugger in the USER's frame, from inside our hooks, with a reason the editor shows: the one place that
touches pydevd's private API (checked against debugpy 1.8.x's vendored pydevd; a test drives it through a real
debugpy session).

``debugpy.breakpoint()`` would stop in its caller, i.e. inside our hook or torch's dispatch, and only at the *next*
line. The NaN sentinel needs the opposite: the user's frame, at the line that called the op, with a message naming
the op. pydevd does exactly that for exceptions, so ``stop_in_frame`` presents the stop as one: a synthetic exception
whose traceback starts at the user's frame. The editor then shows the exception widget ("NaN born here" + the
reason) on that line, the Call Stack starts at that frame, Variables shows its locals plus what we add, and
continue/step behave as after any stop.

``hide_agent_files`` registers our package in pydevd's don't-trace table (``PyDB.dont_trace_external_files``):
pydevd then never traces our hooks, never steps into them and leaves them out of every Call Stack.

Everything degrades to "not stopped" (the caller reports instead) when debugpy, pydevd or a client is missing, when
the thread is already held by the debugger (an evaluation in the Debug Console ran the model), or when the private
API changed.
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Mapping
from typing import Any

from tensorsight.agent.runtime.guard import report_once
from tensorsight.agent.runtime.user_code import is_agent_file


class _Stop(Exception):
    """The synthetic exception behind a stop; its class is renamed per stop (the editor shows the name as title)."""


def global_debugger() -> Any:
    """pydevd's debugger of this process (its ``PyDB``), or None when no debugger is loaded."""
    pydevd = sys.modules.get("pydevd")
    getter = getattr(pydevd, "get_global_debugger", None)
    return getter() if getter is not None else None


def client_connected() -> bool:
    """True when a debug client (VS Code, the tests' DAP client) is attached to this process."""
    debugpy = sys.modules.get("debugpy")
    probe = getattr(debugpy, "is_client_connected", None)
    if probe is not None:
        try:
            return bool(probe())
        except Exception:  # noqa: BLE001 - debugpy not configured in this process
            return False
    return global_debugger() is not None


def _thread_info(py_db: Any, thread: threading.Thread) -> Any:
    setter = getattr(py_db, "set_additional_thread_info", None)
    if setter is not None:
        return setter(thread)
    from _pydevd_bundle.pydevd_additional_thread_info import set_additional_thread_info  # type: ignore[import-not-found]

    return set_additional_thread_info(thread)


def thread_held_by_debugger() -> bool:
    """True while this thread is inside a debugger stop (e.g. running an expression typed in the Debug Console)."""
    py_db = global_debugger()
    if py_db is None:
        return False
    try:
        info = _thread_info(py_db, threading.current_thread())
        return bool(getattr(info, "is_in_wait_loop", False))
    except Exception:  # noqa: BLE001
        return False


def stop_in_frame(
    frame: types.FrameType,
    title: str,
    description: str,
    extra_locals: Mapping[str, Any] | None = None,
    line: int | None = None,
) -> bool:
    """Hold this thread in the debugger at ``frame`` (its current line) until the user resumes.

    The stop reaches the client as ``stopped`` with ``reason: "exception"``, ``text: title`` and
    ``description: description``; ``exceptionInfo`` answers the same. ``extra_locals`` appear in Variables for the
    duration of the stop (names already used by the frame are left alone). ``line`` shows another line of the same
    frame as the stop's line (the op of a still-running frame, when the NaN was found later). Returns False, without
    stopping, when there is no debugger to stop in; the caller then reports by other means.
    """
    py_db = global_debugger()
    if py_db is None or not client_connected():
        return False
    try:
        from _pydevd_bundle.pydevd_comm_constants import CMD_STEP_CAUGHT_EXCEPTION  # type: ignore[import-not-found]
        from _pydevd_bundle.pydevd_constants import EXCEPTION_TYPE_HANDLED  # type: ignore[import-not-found]
    except ImportError as exc:
        report_once("pause-api", f"cannot stop in the debugger (pydevd API changed: {exc}); reporting only")
        return False
    thread = threading.current_thread()
    try:
        info = _thread_info(py_db, thread)
    except Exception as exc:  # noqa: BLE001
        report_once("pause-thread", f"cannot stop in the debugger ({type(exc).__name__}: {exc}); reporting only")
        return False
    if getattr(info, "is_in_wait_loop", False):
        return False  # already held by the debugger (Debug Console evaluation): never nest a stop
    hide_agent_files()
    stop_type = type(title, (_Stop,), {"__module__": "tensorsight", "__qualname__": title})
    error = stop_type(description)
    trace = types.TracebackType(None, frame, frame.f_lasti, line if line is not None else frame.f_lineno)
    added = _add_locals(frame, extra_locals or {})
    # pydevd's tracer suspends at the first traced line it sees while the thread is marked suspended; marking this
    # thread as "inside the tracer" keeps it from stopping in our own frames on the way into do_wait_suspend.
    # Under sys.monitoring (Python 3.12+) that mark is not read: the thread's monitoring switch is turned off instead
    # (what pydevd's own trigger_exception_handler does), or the first line event on the way in, in a library frame
    # such as contextlib's, would become the stop, with no reason.
    info.is_tracing += 1
    monitoring_was_on = _suspend_monitoring()
    try:
        py_db.set_suspend(thread, CMD_STEP_CAUGHT_EXCEPTION)
        py_db.do_wait_suspend(thread, frame, "exception", (stop_type, error, trace), EXCEPTION_TYPE_HANDLED)
    except Exception as exc:  # noqa: BLE001
        report_once("pause-wait", f"the debugger stop failed ({type(exc).__name__}: {exc}); reporting only")
        return False
    finally:
        if monitoring_was_on:
            _resume_monitoring()
        info.is_tracing -= 1
        _remove_locals(frame, added)
        del trace, error
    try:
        # after a "step over" at the stop, the user's frame must be traced for pydevd to stop at its next line
        py_db.set_trace_for_frame_and_parents(thread.ident, frame)
    except Exception:  # noqa: BLE001 - stepping then behaves like continue; the stop itself happened
        pass
    return True


def sys_monitoring() -> Any:
    """pydevd's ``pydevd_sys_monitoring`` module when this debugger traces through ``sys.monitoring`` (PEP 669,
    Python 3.12+), else None (``sys.settrace``, or no pydevd)."""
    constants = sys.modules.get("_pydevd_bundle.pydevd_constants")
    if not getattr(constants, "PYDEVD_USE_SYS_MONITORING", False):
        return None
    return sys.modules.get("_pydevd_sys_monitoring.pydevd_sys_monitoring")


def _suspend_monitoring() -> bool:
    """Turn this thread's sys.monitoring events off (pydevd's per-thread switch); True when they were on."""
    monitoring = sys_monitoring()
    suspend = getattr(monitoring, "suspend_current_thread_tracing", None)
    if suspend is None:
        return False
    try:
        return bool(suspend())
    except Exception as exc:  # noqa: BLE001 - the stop goes ahead; it may land in a library frame
        report_once("pause-monitoring", f"could not pause the debugger's sys.monitoring for a stop: {exc!r}")
        return False


def _resume_monitoring() -> None:
    monitoring = sys_monitoring()
    resume = getattr(monitoring, "resume_current_thread_tracing", None)
    if resume is not None:
        try:
            resume()
        except Exception as exc:  # noqa: BLE001
            report_once("pause-monitoring-resume", f"could not resume the debugger's sys.monitoring: {exc!r}")


def _add_locals(frame: types.FrameType, values: Mapping[str, Any]) -> list[str]:
    """Show ``values`` among the frame's Variables (pydevd does the same for ``__exception__``)."""
    added = []
    try:
        scope = frame.f_locals
        for name, value in values.items():
            if name not in scope:
                scope[name] = value
                added.append(name)
    except Exception:  # noqa: BLE001 - a frame whose locals cannot take extras: the values stay reachable elsewhere
        pass
    return added


def _remove_locals(frame: types.FrameType, names: list[str]) -> None:
    """Take the added values out again. Python 3.13.0's ``f_locals`` proxy (PEP 667) can add a name but not remove
    one (fixed in 3.13.1): there the name stays, holding None, as pydevd leaves its ``__exception__``."""
    try:
        scope = frame.f_locals
        for name in names:
            if hasattr(scope, "pop"):
                scope.pop(name, None)
            else:
                scope[name] = None
    except Exception:  # noqa: BLE001
        pass


_hidden = False


def forget_hidden() -> None:
    """In a forked child, whose pydevd makes a debugger of its own: the next ``hide_agent_files`` hides again."""
    global _hidden
    _hidden = False


def hide_agent_files() -> bool:
    """Make pydevd treat every file of our package as debugger-internal: not traced, not stepped into, not listed.

    Chains pydevd's ``dont_trace_external_files`` (the hook its ``dontTraceStartPatterns`` setting replaces), so
    a pattern the client sets still applies. Idempotent; False when no debugger is present yet.
    """
    global _hidden
    if _hidden:
        return True
    py_db = global_debugger()
    if py_db is None:
        return False
    previous = getattr(py_db, "dont_trace_external_files", None)
    if previous is None:
        return False

    def dont_trace_tensorsight_files(abs_path: str) -> bool:
        return is_agent_file(abs_path) or bool(previous(abs_path))

    # keep the attributes pydevd's own pattern setter reads when it later compares patterns
    for attribute in ("start_patterns", "end_patterns"):
        if hasattr(previous, attribute):
            setattr(dont_trace_tensorsight_files, attribute, getattr(previous, attribute))
    try:
        py_db.dont_trace_external_files = dont_trace_tensorsight_files
        clear = getattr(py_db, "clear_dont_trace_start_end_patterns_caches", None)
        if clear is not None:
            clear()
    except Exception as exc:  # noqa: BLE001
        report_once("pause-hide", f"could not hide TensorSight's own frames from the debugger: {exc}")
        return False
    _hidden = True
    return True


def hide_code(code: types.CodeType, filename: str) -> bool:
    """Make pydevd treat one code object as debugger-internal although its file is the user's: the one-line
    functions ``runtime.op_calls`` compiles with the user's file name (so that warnings keep their location) must not
    hit the user's breakpoints, be stepped into or be listed. Seeds pydevd's file-type cache for that code object
    (its key: first line, absolute path, code). False when no debugger is present or the private API changed."""
    if global_debugger() is None:
        return False
    try:
        pydevd = sys.modules["pydevd"]
        file_utils = sys.modules["pydevd_file_utils"]
        absolute = file_utils.get_abs_path_real_path_and_base_from_file(filename)[0]
        pydevd._CACHE_FILE_TYPE[(code.co_firstlineno, absolute, code)] = pydevd.PYDEV_FILE
        return True
    except Exception as exc:  # noqa: BLE001
        report_once("pause-hide-code", f"could not hide TensorSight's op calls from the debugger: {exc}")
        return False
