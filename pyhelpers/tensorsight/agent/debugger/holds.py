"""How long the debugger has held each thread (stopped at a breakpoint, a step, a pause, an exception, our sentinel).

Armed under a debugger by ``tensorsight.agent.runtime.install`` (``DEBUGGER_FEATURES``): ``arm`` wraps pydevd's
``PyDB.do_wait_suspend``, the call in which pydevd parks a thread until the user continues (private API, checked
against debugpy 1.8.x's vendored pydevd, whose Cython tracer calls it through the instance too). The wrapper calls the
original unchanged and only notes the time on each side. ``held_seconds`` gives a thread's total held time, a hold in
progress included; the phase clock (``tensorsight.agent.measurement.phases``) subtracts it, so a step during which
the user sat at a breakpoint for a minute is timed as the program ran it. Without a debugger (the doctor) nothing is
wrapped and ``held_seconds`` is 0.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from tensorsight.agent.runtime.guard import report_once
from tensorsight.agent.runtime.patches import Patches

_patches = Patches("holds")
_total: dict[int, float] = {}  # thread ident -> seconds held in finished holds
_since: dict[int, float] = {}  # thread ident -> perf_counter() when its hold in progress began


def arm(origin: str = "debugger") -> None:
    """Wrap ``PyDB.do_wait_suspend`` once (a no-op when pydevd is not loaded or its API moved)."""
    pydevd = sys.modules.get("pydevd")
    owner = getattr(pydevd, "PyDB", None)
    original = getattr(owner, "do_wait_suspend", None)
    if owner is None or original is None:
        report_once("holds-api", "pydevd's PyDB.do_wait_suspend not found: phase timings include debugger pauses")
        return
    _patches.replace(owner, "do_wait_suspend", _held)


def _held(original: Any) -> Any:
    def do_wait_suspend(*args: Any, **kwargs: Any) -> Any:
        ident = threading.get_ident()
        nested = ident in _since  # an evaluation while held can stop again: the outer hold already counts
        if not nested:
            _since[ident] = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            if not nested:
                began = _since.pop(ident, None)
                if began is not None:
                    _total[ident] = _total.get(ident, 0.0) + time.perf_counter() - began

    return do_wait_suspend


def held_seconds(ident: int | None = None) -> float:
    """Seconds the debugger has held thread ``ident`` (default: the calling thread), a hold in progress included."""
    key = threading.get_ident() if ident is None else ident
    began = _since.get(key)
    return _total.get(key, 0.0) + (time.perf_counter() - began if began is not None else 0.0)


def program_clock() -> float:
    """``time.perf_counter()`` that stands still while the debugger holds the calling thread."""
    key = threading.get_ident()  # held_seconds() inlined: the phase clock reads this several times a step
    began = _since.get(key)
    now = time.perf_counter()
    return now - _total.get(key, 0.0) - (now - began if began is not None else 0.0)


__all__ = ["arm", "held_seconds", "program_clock"]
