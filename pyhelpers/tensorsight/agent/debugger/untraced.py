"""Runs the program's ``import torch`` (or numpy) with the debugger's tracer off on the importing thread.

Called by ``agent.runtime.lazy_import`` around the real loader of a library the agent waits for, and only there.
Under pydevd on Python < 3.12 (``sys.settrace``), every Python call pays the tracer, and ``import torch`` is over a
million calls (cProfile) into torch's own module bodies: on a 2-core machine it took 1.5 s of CPU plain and 3.0 s under
debugpy, the largest single share of a short "Debug Training" run's overhead (``benchmarks/bench_debug_run.py``).
No code of the program runs inside that import, so nothing the user can break in is skipped, except breakpoints
inside the library's own module-level code while it is being imported (and a Step Into on the import line steps
over it). The switch is debugpy's public
``debugpy.trace_this_thread``; tracing is restored in a ``finally``, so the frame that imported torch stops at its
next breakpoint as before. Without a debugger, or where pydevd does not trace through ``sys.settrace`` (Python 3.12+
``sys.monitoring``, already cheap), this does nothing.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from tensorsight.agent.runtime.guard import report_once


@contextlib.contextmanager
def untraced_import() -> Iterator[None]:
    """The body runs untraced by the debugger on this thread when it was traced; the tracer is restored after."""
    debugpy = sys.modules.get("debugpy")
    toggle = getattr(debugpy, "trace_this_thread", None)
    if toggle is None or sys.gettrace() is None or "pydevd" not in sys.modules:
        yield
        return
    try:
        toggle(False)
    except Exception as exc:  # noqa: BLE001 - the import goes ahead traced
        report_once("untraced-import", f"could not pause the debugger's tracing during an import: {exc!r}")
        yield
        return
    try:
        yield
    finally:
        try:
            toggle(True)
        except Exception as exc:  # noqa: BLE001
            report_once("untraced-import-restore", f"could not resume the debugger's tracing after an import: {exc!r}")


def arm(origin: str = "debugger") -> None:
    """Nothing to set up: once this module is imported (``install``'s debugger features), ``lazy_import`` uses it."""
