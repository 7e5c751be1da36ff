"""pydevd's fixed pauses, shortened for one call on one thread: the module-level ``time`` a pydevd function sees.

Used by ``agent.debugger.link`` (the 0.1 s pause after opening the connection) and ``agent.debugger.shutdown`` (the
0.1 s polls while the session's threads end). pydevd sleeps through its module's global ``time`` (the real module,
saved by ``_pydev_bundle._pydev_saved_modules``). ``call_with_sleeps`` runs a pydevd function with that global
replaced by ``ShortSleepClock`` for the length of the call: on the calling thread each ``sleep(s)`` lasts
``sleep_for(s)`` instead; every other thread, and every other attribute (``time()``, ``monotonic()``), reaches the real
module. The global is put back in a ``finally``. A function whose module has no such ``time`` runs unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class ShortSleepClock:
    """The ``time`` module as one thread should see it: its sleeps shortened, everything else the real module's."""

    def __init__(self, clock: Any, sleep_for: Callable[[float], float]) -> None:
        self._clock = clock
        self._sleep_for = sleep_for
        self._thread = threading.get_ident()

    def sleep(self, seconds: float) -> None:
        if threading.get_ident() != self._thread:
            self._clock.sleep(seconds)
            return
        shortened = self._sleep_for(seconds)
        if shortened > 0:
            self._clock.sleep(shortened)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._clock, name)


def call_with_sleeps(function: Any, sleep_for: Callable[[float], float], /, *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` with its module's ``time.sleep`` shortened by ``sleep_for`` on this thread."""
    module_globals = getattr(function, "__globals__", None)
    if not isinstance(module_globals, dict):
        return function(*args, **kwargs)
    clock = module_globals.get("time")
    if clock is None or isinstance(clock, ShortSleepClock) or not callable(getattr(clock, "sleep", None)):
        return function(*args, **kwargs)
    module_globals["time"] = ShortSleepClock(clock, sleep_for)
    try:
        return function(*args, **kwargs)
    finally:
        module_globals["time"] = clock
