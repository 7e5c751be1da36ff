"""Test program for tensorsight.agent.debugger.threads and .breakpoints
(tests/agent/debugger/test_debugger_internals.py).

A thread hidden from pydevd keeps sampling the main thread while the debugger holds it at ``# @bp held``; the test
checks that the Threads view does not list it and that a breakpoint set after ``drop_line_breakpoints`` never stops.
No torch needed.
"""

import sys
import threading
import time

from tensorsight.agent.debugger import breakpoints, threads

MAIN = threading.main_thread().ident
samples: list[bool] = []
done = threading.Event()


def watch() -> None:
    while not done.is_set():
        samples.append(threads.held_by_debugger(sys._current_frames().get(MAIN)))
        time.sleep(0.02)


threads.hide_from_debugger(threading.Thread(target=watch, name="tensorsight-test-watcher", daemon=True)).start()
visible = threading.Thread(target=done.wait, name="user-visible-thread", daemon=True)
visible.start()
time.sleep(0.3)
held_before = any(samples)
dropped = breakpoints.drop_line_breakpoints()
value = 1  # @bp held
time.sleep(0.3)
held_after = samples[-1]
value += 1  # @bp dropped
done.set()
print("results", held_before, any(samples), held_after, dropped, value)
