"""agent.debugger.untraced in real debugpy sessions: library imports (``import torch``, the ``torch._dynamo`` that
``torch.optim.Adam`` imports lazily, any package under a library folder) run with the debugger's tracer off while
pydevd has nothing to stop at in library code, and every breakpoint of the program still stops: after the import, in
the program's functions, and in the program's code that torch calls back (a Dataset's ``__getitem__`` in the main
process and in a DataLoader worker, a forward hook). A breakpoint inside the library keeps its import traced, so it
stops too. Under Python 3.12+ (scripts/test.sh runs this module there too) pydevd traces through sys.monitoring, which
costs nothing per call once it has turned a code object's events off: nothing is armed there
(``SETTRACE_DEBUGGER``), and every breakpoint still stops.
"""

from __future__ import annotations

import ast
import os
import pathlib
import sys

import pytest

from support.dap import DebugSession
from support.dap_multi import MultiProcessSession
from support.interpreters import SETTRACE_DEBUGGER
from support.paths import marked_lines

torch = pytest.importorskip("torch")

PROGRAMS = pathlib.Path(__file__).parent / "programs"
IMPORT_THEN_BREAK = str(PROGRAMS / "import_then_break.py")
IMPORT_LIBRARY = str(PROGRAMS / "import_library_then_break.py")
USER_CODE_FROM_LIBRARY = str(PROGRAMS / "user_code_from_library.py")
OPTIONS = {"breakOnNonFinite": False, "observeShapes": False, "checkLeakage": False, "measure": False}
SLOW = 240.0  # a traced torch import on a loaded 2-core machine
UNTRACED_IMPORTS = "__import__('tensorsight.agent.debugger.untraced', fromlist=['_']).untraced_imports()"


def last_module_level_line(path: str) -> int:
    """A line of ``path`` that runs once when the module is imported (its last top-level statement)."""
    tree = ast.parse(pathlib.Path(path).read_text())
    return tree.body[-1].lineno


def write_library(root: pathlib.Path) -> tuple[str, str]:
    """A package ``fakelib`` under ``root/site-packages`` whose bodies record ``sys.gettrace()``; its two files."""
    package = root / "site-packages" / "fakelib"
    package.mkdir(parents=True)
    outer = package / "__init__.py"
    outer.write_text(
        "import sys\n"
        "TRACED = {'outer': sys.gettrace() is not None}\n"
        "from fakelib import inner\n"
        "TRACED['inner'] = inner.TRACED\n"
    )
    inner = package / "inner.py"
    inner.write_text("import sys\nTRACED = sys.gettrace() is not None\nDONE = True\n")
    return str(outer), str(inner)


@pytest.mark.timeout(300)
def test_a_library_imports_untraced_and_the_programs_breakpoints_still_stop(tmp_path):
    lines = marked_lines(IMPORT_LIBRARY)
    write_library(tmp_path)
    breakpoints = [(IMPORT_LIBRARY, lines["after-import"], None), (IMPORT_LIBRARY, lines["in-function"], None)]
    with DebugSession.launch(
        IMPORT_LIBRARY, args=[str(tmp_path / "site-packages")], breakpoints=breakpoints, options=OPTIONS
    ) as session:
        first = session.wait_for_stop(timeout=SLOW)
        frame = session.top_frame(first)
        assert (frame["source"]["path"], frame["line"]) == (IMPORT_LIBRARY, lines["after-import"])
        assert session.evaluate("sys.gettrace() is not None", frame["id"])["result"] == str(SETTRACE_DEBUGGER)
        untraced = int(session.evaluate(UNTRACED_IMPORTS, frame["id"])["result"])
        assert untraced >= 1 if SETTRACE_DEBUGGER else untraced == 0
        session.continue_(first["threadId"])
        second = session.wait_for_stop()
        frame = session.top_frame(second)
        assert (frame["source"]["path"], frame["line"]) == (IMPORT_LIBRARY, lines["in-function"])
        session.continue_(second["threadId"])
        assert session.wait_for_exit() == 0
    if SETTRACE_DEBUGGER:
        assert "traced outer=False inner=False after True" in session.stdout()


@pytest.mark.timeout(300)
def test_a_breakpoint_in_the_library_keeps_its_import_traced_and_stops(tmp_path):
    _outer, inner = write_library(tmp_path)
    done = len(pathlib.Path(inner).read_text().splitlines())
    with DebugSession.launch(
        IMPORT_LIBRARY, args=[str(tmp_path / "site-packages")], breakpoints=[(inner, done, None)], options=OPTIONS
    ) as session:
        stop = session.wait_for_stop(timeout=SLOW)
        frame = session.top_frame(stop)
        assert (os.path.realpath(frame["source"]["path"]), frame["line"]) == (os.path.realpath(inner), done)
        session.continue_(stop["threadId"])
        assert session.wait_for_exit() == 0
    if SETTRACE_DEBUGGER:
        assert "traced outer=True inner=True after True" in session.stdout()


@pytest.mark.timeout(300)
def test_a_breakpoint_in_torch_itself_stops_while_torch_imports():
    """What the earlier, unconditional untraced ``import torch`` skipped: now the import stays traced for it."""
    lines = marked_lines(IMPORT_THEN_BREAK)
    torch_init = os.path.join(os.path.dirname(torch.__file__), "__init__.py")
    line = last_module_level_line(torch_init)
    breakpoints = [(torch_init, line, None), (IMPORT_THEN_BREAK, lines["after-import"], None)]
    with DebugSession.launch(IMPORT_THEN_BREAK, breakpoints=breakpoints, options=OPTIONS) as session:
        first = session.wait_for_stop(timeout=SLOW)
        frame = session.top_frame(first)
        assert (os.path.realpath(frame["source"]["path"]), frame["line"]) == (os.path.realpath(torch_init), line)
        session.continue_(first["threadId"])
        second = session.wait_for_stop(timeout=SLOW)
        frame = session.top_frame(second)
        assert (frame["source"]["path"], frame["line"]) == (IMPORT_THEN_BREAK, lines["after-import"])


@pytest.mark.timeout(400)
def test_user_code_that_torch_calls_back_stops_in_the_main_process_and_in_a_worker():
    lines = marked_lines(USER_CODE_FROM_LIBRARY)
    breakpoints = [
        (USER_CODE_FROM_LIBRARY, lines["getitem"], "index == 1"),
        (USER_CODE_FROM_LIBRARY, lines["hook"], None),
    ]
    with MultiProcessSession.launch(
        program=USER_CODE_FROM_LIBRARY,
        cwd=str(PROGRAMS),
        breakpoints=breakpoints,
        options=OPTIONS,
        exception_filters=["uncaught"],
        timeout=SLOW,
    ) as job:
        root = job.root
        stop = root.wait_for_stop(timeout=SLOW)
        frame = root.top_frame(stop)
        assert (frame["source"]["path"], frame["line"]) == (USER_CODE_FROM_LIBRARY, lines["getitem"])
        assert root.evaluate("self.where", frame["id"])["result"] == "'main'"
        # torch and the torch._dynamo that Adam imported ran untraced, with the program's breakpoints set
        untraced = int(root.evaluate(UNTRACED_IMPORTS, frame["id"])["result"])
        assert untraced >= 2 if SETTRACE_DEBUGGER else untraced == 0
        assert root.evaluate("'torch._dynamo' in __import__('sys').modules", frame["id"])["result"] == "True"
        root.continue_(stop["threadId"])
        stop = root.wait_for_stop(timeout=SLOW)
        frame = root.top_frame(stop)
        assert (frame["source"]["path"], frame["line"]) == (USER_CODE_FROM_LIBRARY, lines["hook"])
        root.continue_(stop["threadId"])
        (worker,) = job.wait_for_workers(1, timeout=SLOW)
        stop = worker.wait_for_stop(timeout=SLOW)
        frame = worker.top_frame(stop)
        assert (frame["source"]["path"], frame["line"]) == (USER_CODE_FROM_LIBRARY, lines["getitem"])
        assert worker.evaluate("self.where", frame["id"])["result"] == "'worker'"
        worker.continue_(stop["threadId"])
        assert root.wait_for_exit(timeout=SLOW) == 0
        assert "done" in root.stdout()


def test_without_a_tracer_the_import_context_is_a_plain_block():
    """The doctor and plain runs: no debugger traces the thread, so nothing is toggled and the body runs once."""
    from tensorsight.agent.debugger.untraced import untraced_import

    ran = []
    before = sys.gettrace()
    with untraced_import():
        ran.append(sys.gettrace())
    assert ran == [before] and sys.gettrace() is before


class FakeDebugger:
    """pydevd's breakpoint tables, as ``nothing_to_hit`` reads them (names from debugpy 1.8.x's ``PyDB``)."""

    def __init__(self, **tables: object) -> None:
        self.breakpoints: dict[str, dict[int, object]] = {}
        self.function_breakpoint_name_to_breakpoint: dict[str, object] = {}
        self.break_on_caught_exceptions: dict[str, object] = {}
        self.break_on_user_uncaught_exceptions: dict[str, object] = {}
        self.has_plugin_line_breaks = False
        self.has_plugin_exception_breaks = False
        for name, value in tables.items():
            setattr(self, name, value)


class FakeThread:
    def __init__(self, step_cmd: int) -> None:
        self.additional_info = type("Info", (), {"pydev_step_cmd": step_cmd})()


@pytest.mark.parametrize(
    ("tables", "step_cmd", "expected"),
    [
        ({}, -1, True),
        ({"breakpoints": {"/project/train.py": {12: object()}}}, -1, True),  # the program's own file
        ({"breakpoints": {"/project/.venv/lib/site-packages/torch/nn/modules/linear.py": {}}}, -1, True),  # cleared
        ({"breakpoints": {"/project/.venv/lib/site-packages/torch/nn/modules/linear.py": {130: object()}}}, -1, False),
        ({"function_breakpoint_name_to_breakpoint": {"forward": object()}}, -1, False),
        ({"break_on_caught_exceptions": {"BaseException": object()}}, -1, False),
        ({"break_on_user_uncaught_exceptions": {"BaseException": object()}}, -1, False),
        ({"has_plugin_line_breaks": True}, -1, False),
        ({}, 107, False),  # the thread is stepping into
        ({"breakpoints": None}, -1, False),  # unreadable tables: keep tracing
    ],
)
def test_nothing_to_hit_reads_pydevds_tables(tables, step_cmd, expected):
    from tensorsight.agent.debugger.untraced import nothing_to_hit

    assert nothing_to_hit(FakeDebugger(**tables), FakeThread(step_cmd)) is expected  # type: ignore[arg-type]
