"""agent.debugger.untraced in a real debugpy session: the program's ``import torch`` runs with the debugger's tracer
off (a breakpoint in torch's own module-level code is not hit while torch imports), and tracing is back right after:
the breakpoints of the program after the import, in the importing frame and in a function, stop as before.
"""

from __future__ import annotations

import ast
import os
import pathlib

import pytest

from support.dap import DebugSession
from support.paths import marked_lines

torch = pytest.importorskip("torch")

PROGRAM = str(pathlib.Path(__file__).parent / "programs" / "import_then_break.py")
OPTIONS = {"breakOnNonFinite": False, "observeShapes": False, "checkLeakage": False, "measure": False}


def last_module_level_line(path: str) -> int:
    """A line of ``path`` that runs once when the module is imported (its last top-level statement)."""
    tree = ast.parse(pathlib.Path(path).read_text())
    return tree.body[-1].lineno


@pytest.mark.timeout(180)
def test_torch_imports_untraced_and_the_programs_breakpoints_still_stop():
    lines = marked_lines(PROGRAM)
    torch_init = os.path.join(os.path.dirname(torch.__file__), "__init__.py")
    breakpoints = [
        (torch_init, last_module_level_line(torch_init), None),
        (PROGRAM, lines["after-import"], None),
        (PROGRAM, lines["in-function"], None),
    ]
    with DebugSession.launch(PROGRAM, breakpoints=breakpoints, options=OPTIONS) as session:
        first = session.wait_for_stop()
        frame = session.top_frame(first)
        assert (frame["source"]["path"], frame["line"]) == (PROGRAM, lines["after-import"])
        traced = session.evaluate("__import__('sys').gettrace() is not None", frame["id"])
        assert traced["result"] == "True"
        session.continue_(first["threadId"])
        second = session.wait_for_stop()
        frame = session.top_frame(second)
        assert (frame["source"]["path"], frame["line"]) == (PROGRAM, lines["in-function"])
        session.continue_(second["threadId"])
        assert session.wait_for_exit() == 0
    assert "result 0.0" in session.stdout()


@pytest.mark.timeout(180)
def test_without_the_agent_the_same_breakpoint_in_torch_is_hit():
    """The control: plain debugpy does stop in torch's module code during the import (what the agent turns off)."""
    torch_init = os.path.join(os.path.dirname(torch.__file__), "__init__.py")
    line = last_module_level_line(torch_init)
    with DebugSession.launch(PROGRAM, breakpoints=[(torch_init, line, None)], inject=False) as session:
        stop = session.wait_for_stop()
        frame = session.top_frame(stop)
        assert (frame["source"]["path"], frame["line"]) == (torch_init, line)


def test_without_a_tracer_the_import_context_is_a_plain_block():
    """The doctor and plain runs: no debugger traces the thread, so nothing is toggled and the body runs once."""
    import sys

    from tensorsight.agent.debugger.untraced import untraced_import

    ran = []
    before = sys.gettrace()
    with untraced_import():
        ran.append(sys.gettrace())
    assert ran == [before] and sys.gettrace() is before
