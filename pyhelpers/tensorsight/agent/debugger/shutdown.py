"""A debugged process, and each DataLoader worker, ends as soon as its program does, not 0.6 s later.

Armed under a debugger by ``tensorsight.agent.runtime.install`` (``DEBUGGER_FEATURES``). When the program's last
thread ends, pydevd 1.8.x (debugpy's vendored copy) waits three times before the process may exit:

1. Its ``CheckAliveThread`` is the one non-daemon thread left, so the interpreter's shutdown joins it, and it looks
   for finished user threads only every 0.2 s (``TIMEOUT_SLOW``).
2. It then disposes of the session: sends ``terminated``, stops its threads and waits up to 0.5 s for them, looking
   every 0.1 s.
3. Its reader thread sees the adapter close the socket and asks for the same disposal, which makes it wait for the
   first caller's wait to finish, while that one waits for the reader to end: the half second always runs out.

A DataLoader joins its workers one loader after another, at the end of every epoch for workers that do not persist
and at the end of the program for those that do, so a plain F5 on a script with two persistent loaders waited about
0.65 s per loader and again at the very end (``benchmarks/bench_debug_run.py``).

``arm`` removes the three waits, changing nothing else:

- a ``threading`` exit callback (which the interpreter's shutdown calls from the main thread before it joins the
  remaining threads, and ``multiprocessing`` in a forked worker) makes at once the disposal ``CheckAliveThread`` would
  make at its next look, when no other user thread is alive (otherwise pydevd keeps debugging those threads as
  before). The call is pydevd's own (``dispose_and_kill_all_pydevd_threads``), made as its ``stoptrace`` makes it at
  exit, with its 0.1 s looks shortened to 5 ms on this thread (``agent.debugger.pydevd_clock``);
- ``ReaderThread._terminate_on_socket_close`` asks for the disposal without waiting when the session is already being
  disposed, so the first caller's wait ends as soon as the threads have gone. A socket the adapter closes first (Stop,
  disconnect) takes pydevd's own path unchanged.

The messages pydevd sends at the end (thread exits, ``terminated``) are sent as before: the disposal still waits for
its writer to empty, and the standard streams are flushed first. Private pydevd API, checked against debugpy 1.8.x;
where it moved, the feature reports it once and leaves pydevd as it is.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from tensorsight.agent.debugger.pause import global_debugger
from tensorsight.agent.debugger.pydevd_clock import call_with_sleeps
from tensorsight.agent.runtime.guard import never_raise, report_once
from tensorsight.agent.runtime.patches import Patches

_patches = Patches("shutdown")
_registered = [False]
_POLL_SECONDS = 0.005


def arm(origin: str = "debugger") -> None:
    """Wrap the reader's end-of-socket disposal and register the exit callback, once per process."""
    comm = sys.modules.get("_pydevd_bundle.pydevd_comm")
    reader = getattr(comm, "ReaderThread", None)
    original = getattr(reader, "_terminate_on_socket_close", None)
    register = getattr(threading, "_register_atexit", None)
    if original is None or register is None:
        report_once("shutdown-api", "pydevd's ReaderThread not found: a debugged process may take 0.7 s to exit")
        return
    _patches.replace(reader, "_terminate_on_socket_close", _without_mutual_wait)
    if not _registered[0]:
        _registered[0] = True
        register(end_session_now)


@never_raise()
def end_session_now() -> None:
    """Dispose of pydevd's session at once, as its CheckAliveThread would at its next look, when no user thread is left.

    The same call pydevd makes from that thread (and from ``stoptrace`` at exit): it waits for its writer to empty,
    sends ``terminated``, stops its threads and waits for them. The standard streams are flushed first, as
    ``stoptrace`` does, so output still buffered reaches the debug console before the session ends.
    """
    debugger = global_debugger()
    if debugger is None or getattr(debugger, "check_alive_thread", None) is None:
        return
    if getattr(debugger, "pydb_disposed", True) or other_user_threads_alive():
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed or replaced stream
            pass
    call_with_sleeps(debugger.dispose_and_kill_all_pydevd_threads, short_poll)


def short_poll(seconds: float) -> float:
    """pydevd looks whether its threads have ended every 0.1 s; on the exiting thread, every 5 ms instead."""
    return min(seconds, _POLL_SECONDS)


def other_user_threads_alive() -> bool:
    """Whether a thread pydevd counts as the user's, other than the one shutting down, still runs.

    pydevd's ``has_user_threads_alive`` with the calling thread left out: the interpreter calls ``threading``'s exit
    callbacks from the main thread before it marks that thread stopped.
    """
    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread is current or getattr(thread, "is_pydev_daemon_thread", False):
            continue
        if thread.is_alive() and (not thread.daemon or hasattr(thread, "__pydevd_main_thread")):
            return True
    return False


def _without_mutual_wait(original: Any) -> Any:
    def terminate_on_socket_close(self: Any) -> Any:
        debugger: Any = getattr(self, "py_db", None)
        terminates = getattr(self, "_ReaderThread__terminate_on_socket_close", True)
        if terminates and debugger is not None and getattr(debugger, "pydb_disposed", False):
            return debugger.dispose_and_kill_all_pydevd_threads(wait=False)
        return original(self)

    return terminate_on_socket_close
