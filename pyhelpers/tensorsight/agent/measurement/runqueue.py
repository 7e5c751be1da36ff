"""How long the calling thread waited for a CPU: Linux's per-thread scheduler statistics, read by the phase clock.

``/proc/thread-self/schedstat`` holds three numbers for the thread that reads it: nanoseconds on a CPU, nanoseconds
runnable but waiting on a run queue, and the number of time slices. The second one is time the machine took away:
on a busy machine (other programs, a parallel test run, other ranks on the same cores) every phase of a step is
stretched by it, and not evenly (a Python-heavy DataLoader is stretched more than a single-threaded matrix product).
The phase clock (``measurement.phases``) reads it around the data phase and across each step, so that the
data-loading verdict (``core.phases.phase_verdicts``) judges the program's own time, not the machine's load, while the
phase times people read stay wall time.

Where the file is missing (not Linux, or /proc not mounted) every reading is 0.0 and the verdict uses wall time, as
before. One file descriptor is kept per (process, thread) that reads (``runtime.procfs``); nothing is written.
"""

from __future__ import annotations

from tensorsight.agent.runtime.procfs import read_kept

SCHEDSTAT = "/proc/thread-self/schedstat"


def waited_seconds() -> float:
    """Seconds the calling thread has spent runnable but off the CPU since it started (0.0 where unknown)."""
    text = read_kept(SCHEDSTAT, per_thread=True)
    try:
        return int(text.split()[1]) / 1e9 if text is not None else 0.0
    except (ValueError, IndexError):
        return 0.0
