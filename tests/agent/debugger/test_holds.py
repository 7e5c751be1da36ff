"""agent.debugger.holds: the time pydevd holds a thread, as the phase clock reads it.

The wrapper is checked here on a plain function standing for ``do_wait_suspend`` (a hold is a call that returns when
the user continues); tests/agent/measurement/test_phase_clock.py checks it in a real debugpy session.
"""

from __future__ import annotations

import threading
import time

from tensorsight.agent.debugger import holds


def test_a_hold_counts_once_in_progress_and_after_and_only_for_its_thread():
    seen: dict[str, float] = {}

    def wait_for_continue(nested: bool) -> str:
        time.sleep(0.2)
        seen["during"] = holds.held_seconds()
        seen["clock_during_a"] = holds.program_clock()
        time.sleep(0.1)
        seen["clock_during_b"] = holds.program_clock()
        if nested:  # an evaluation while held that stops again: no second count
            wrapped(False)
        return "resumed"

    wrapped = holds._held(wait_for_continue)
    before, start = holds.held_seconds(), time.perf_counter()
    assert wrapped(True) == "resumed"
    wall = time.perf_counter() - start
    held = holds.held_seconds() - before
    assert 0.6 <= held <= wall  # the nested hold lies inside the outer one: counted once (twice would exceed wall)
    assert seen["during"] - before >= 0.2  # a hold in progress already counts
    assert abs(seen["clock_during_b"] - seen["clock_during_a"]) < 0.05  # the program clock stands still
    other: list[float] = []
    thread = threading.Thread(target=lambda: other.append(holds.held_seconds()))
    thread.start()
    thread.join()
    assert other == [0.0]


def test_without_pydevd_nothing_is_wrapped():
    holds.arm("doctor")  # no pydevd in this process: reported once, nothing raised
    assert holds.held_seconds(threading.get_ident() + 1) == 0.0
