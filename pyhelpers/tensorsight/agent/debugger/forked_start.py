"""A forked worker (a DataLoader worker) runs while the editor attaches to it when nothing in it could stop there.

Armed under a debugger by ``tensorsight.agent.runtime.install`` (``DEBUGGER_FEATURES``). With ``subProcess`` on,
debugpy follows every child: in a forked child pydevd connects to the adapter, which asks the editor to attach a
new session, and the child blocks in ``PyDB.wait_for_ready_to_run`` until that session has sent its breakpoints and
``configurationDone``. A DataLoader forks its workers when the loop first asks for a batch, so the training thread
waits out that round trip before the first batch of every loader. Under ``benchmarks/bench_debug_run.py``'s client,
which attaches at once, the first batch of ``examples/correct_training.py`` came 0.29 s after the loop asked for it;
0.1 s once ``agent.debugger.link`` removed Nagle's delays and the connect pause; 20–25 ms with this module. VS Code,
which opens a whole session per worker, takes longer.

The wait exists so that a breakpoint set before the child started is in place before its code runs. When the
parent, at the moment it forks, has nothing that could stop a child (no line or function breakpoint anywhere, no
"raised" or "user-unhandled" exception filter, no plugin breakpoint), the child's new session brings nothing to put
in place either. Then ``arm``'s wrapper lets the child start at once: the session still attaches, and a breakpoint
the user adds later reaches the worker as before. With any breakpoint set, the child waits exactly as pydevd made it
wait. The parent's tables are read in the child, right after the fork and before pydevd replaces its debugger there
(an ``os.register_at_fork`` callback, ``agent.runtime.forks``); a table that cannot be read counts as something to stop
at. Private pydevd API, checked against debugpy 1.8.x; where it moved, nothing is wrapped.
"""

from __future__ import annotations

import sys
from typing import Any

from tensorsight.agent.debugger.pause import global_debugger
from tensorsight.agent.debugger.untraced import no_breakpoint_set
from tensorsight.agent.runtime.forks import in_forked_children
from tensorsight.agent.runtime.guard import never_raise, report_once
from tensorsight.agent.runtime.patches import Patches

_patches = Patches("forked_start")
_start_at_once = [False]  # in a forked child: the parent had nothing that could stop it
_started_at_once = [0]  # connections in this process that started without waiting for their session


def arm(origin: str = "debugger") -> None:
    """Wrap ``PyDB.wait_for_ready_to_run`` once and note, in every forked child, what the parent could stop at."""
    pydevd = sys.modules.get("pydevd")
    owner = getattr(pydevd, "PyDB", None)
    original = getattr(owner, "wait_for_ready_to_run", None)
    if owner is None or original is None:
        report_once("forked-start-api", "pydevd's PyDB.wait_for_ready_to_run not found: workers wait for the editor")
        return
    _patches.replace(owner, "wait_for_ready_to_run", _at_once_when_nothing_to_stop)
    in_forked_children(_note_parent_debugger)


@never_raise()
def _note_parent_debugger() -> None:
    parent = global_debugger()
    _start_at_once[0] = parent is not None and nothing_could_stop_a_child(parent)


def nothing_could_stop_a_child(py_db: Any) -> bool:
    """True when pydevd, as configured in the parent, has no breakpoint or exception filter a child could stop at.

    The "uncaught" filter does not count: a DataLoader worker's loop catches what its dataset raises and hands it to
    the parent, which raises it again there. Anything unreadable counts as something to stop at.
    """
    return no_breakpoint_set(py_db, anywhere=True)


def _at_once_when_nothing_to_stop(original: Any) -> Any:
    def wait_for_ready_to_run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _start_at_once[0]:
            _start_at_once[0] = False  # once: the child's first connection only
            _started_at_once[0] += 1
            self.ready_to_run = True
            return None
        return original(self, *args, **kwargs)

    return wait_for_ready_to_run


def starts_without_waiting() -> int:
    """How many times this process started without waiting for its debug session (0 or 1; read by the tests)."""
    return _started_at_once[0]
