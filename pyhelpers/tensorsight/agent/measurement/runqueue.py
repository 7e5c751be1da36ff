"""How long the calling thread waited for a CPU: Linux's per-thread scheduler statistics, read by the phase clock.

``/proc/thread-self/schedstat`` holds three numbers for the thread that reads it: nanoseconds on a CPU, nanoseconds
runnable but waiting on a run queue, and the number of time slices. The second one is time the machine took away:
on a busy machine (other programs, a parallel test run, other ranks on the same cores) every phase of a step is
stretched by it, and not evenly (a Python-heavy DataLoader is stretched more than a single-threaded matrix product).
The phase clock (``measurement.phases``) reads it around the data phase and across each step, so that the
data-loading verdict (``core.phases.phase_verdicts``) judges the program's own time, not the machine's load, while the
phase times people read stay wall time.

Where the file is missing (not Linux, or /proc not mounted) every reading is 0.0 and the verdict uses wall time, as
before. One file descriptor is kept per (process, thread) that reads; nothing else is opened, nothing is written.
"""

from __future__ import annotations

import os
import threading

SCHEDSTAT = "/proc/thread-self/schedstat"

_descriptors: dict[tuple[int, int], int] = {}
_unavailable: set[tuple[int, int]] = set()


def waited_seconds() -> float:
    """Seconds the calling thread has spent runnable but off the CPU since it started (0.0 where unknown)."""
    key = (os.getpid(), threading.get_native_id())
    descriptor = _descriptors.get(key)
    if descriptor is None:
        if key in _unavailable:
            return 0.0
        try:
            descriptor = os.open(SCHEDSTAT, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            _unavailable.add(key)
            return 0.0
        _descriptors[key] = descriptor
    try:
        return int(os.pread(descriptor, 128, 0).split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0
