"""Reads of small Linux ``/proc`` files that the measurement takes at every step, through a descriptor kept open
(an ``os.pread`` each time, no open and close).

``/proc/self`` and ``/proc/thread-self`` name the process (thread) that opened them, so a descriptor is kept per
process, and per thread for a thread's own file: a forked child, or another thread, opens its own. Where the file is
missing (not Linux, /proc not mounted) every read is None, and the open is not tried again. Nothing is written.
Called by ``measurement.runqueue`` (the thread's scheduler statistics) and ``measurement.memory`` (the process's
resident set).
"""

from __future__ import annotations

import os
import threading

MAX_BYTES = 128  # the files read here are one short line

_descriptors: dict[tuple[str, int, int], int | None] = {}  # (path, process, thread or 0) -> descriptor (None: none)


def read_kept(path: str, per_thread: bool = False) -> bytes | None:
    """The start of ``path`` (at most ``MAX_BYTES``), read through this process's (``per_thread``: this thread's)
    kept descriptor; None when the file cannot be read."""
    key = (path, os.getpid(), threading.get_native_id() if per_thread else 0)
    if key not in _descriptors:
        try:
            _descriptors[key] = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            _descriptors[key] = None
    descriptor = _descriptors[key]
    if descriptor is None:
        return None
    try:
        return os.pread(descriptor, MAX_BYTES, 0)
    except OSError:
        return None
