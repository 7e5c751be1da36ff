"""pydevd's view of threads: hide the agent's own threads from it, and tell when it holds a thread at a stop.

Private pydevd API (checked against debugpy 1.8.x's vendored pydevd), kept here so that no feature spells it:

- ``hide_from_debugger(thread)``: pydevd leaves a thread marked like its own alone (``is_pydev_daemon_thread``: not
  listed in the Threads view, not suspended when the program stops; ``pydev_do_not_trace``: no per-line tracing).
  The hub client's sender and the rank watchdog use it, so they keep running while the user's program is held.
- ``held_by_debugger(frame)``: True when a thread's stack passes through pydevd's suspend loop (``do_wait_suspend``
  in ``pydevd.py``), i.e. the debugger holds it at a breakpoint, step, pause or exception. The rank watchdog reads
  it from ``sys._current_frames()`` to report a rank as "stopped".

Both are plain attribute writes and frame reads: they work (and do nothing harmful) without a debugger.
"""

from __future__ import annotations

import os
import threading
from types import FrameType

# pydevd's frames while it holds a thread at a stop (breakpoint, step, pause, exception, our sentinel).
PYDEVD_SUSPEND_FUNCTIONS = frozenset({"do_wait_suspend", "_do_wait_suspend"})


def hide_from_debugger(thread: threading.Thread) -> threading.Thread:
    """Mark a (not yet started) agent thread as pydevd's own: not traced, not suspended, not listed. Returns it."""
    thread.is_pydev_daemon_thread = True  # type: ignore[attr-defined]
    thread.pydev_do_not_trace = True  # type: ignore[attr-defined]
    return thread


def held_by_debugger(frame: FrameType | None) -> bool:
    """Whether the stack ending at ``frame`` (innermost) is parked in pydevd's suspend loop."""
    walker = frame
    while walker is not None:
        code = walker.f_code
        if code.co_name in PYDEVD_SUSPEND_FUNCTIONS and os.path.basename(code.co_filename) == "pydevd.py":
            return True
        walker = walker.f_back
    return False


__all__ = ["PYDEVD_SUSPEND_FUNCTIONS", "held_by_debugger", "hide_from_debugger"]
