"""The agent's hooks run untraced by the debugger and the program's code inside them traced
(``agent.runtime.untraced_hooks``), and a DataLoader's batches are fetched untraced while nothing could stop there
(``agent.debugger.untraced_data``): against a plain Python tracer, and in real debugpy sessions where every
breakpoint of the program still stops (a tensor subclass's ``__torch_function__`` reached through the NaN sentinel's
mode, a Dataset's ``__getitem__`` in the main process and in a worker, one set while the worker runs). Under Python
3.12+ (pydevd on sys.monitoring; scripts/test.sh runs this module there too) nothing is armed
(``SETTRACE_DEBUGGER``) and the same breakpoints stop, with our frames hidden.
"""

from __future__ import annotations

import pathlib
import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

from support.dap import DebugSession
from support.dap_multi import MultiProcessSession
from support.interpreters import SETTRACE_DEBUGGER
from support.paths import marked_lines
from tensorsight.agent.runtime import op_calls, untraced_hooks
from tensorsight.agent.runtime.untraced_hooks import traced_call, untraced_hook
from tensorsight.agent.runtime.user_code import is_agent_file

PROGRAMS = pathlib.Path(__file__).parent / "programs"
SUBCLASS_IN_TRAINING = str(PROGRAMS / "subclass_in_training.py")
DATASET_TRACING = str(PROGRAMS / "dataset_tracing.py")
SLOW = 240.0
# evaluated on the stopped thread itself: its stack goes on below the frame the Call Stack view shows, whose callers
# (our frames) that view hides
CALLERS = "sorted({f.name for f in __import__('traceback').extract_stack()} & {'run_untraced', 'traced_call'})"
ARMED = "__import__('tensorsight.agent.runtime.untraced_hooks', fromlist=['_']).armed()"


class CallLog:
    """A plain ``sys.settrace`` tracer that notes the name of every function called on this thread."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __call__(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if event == "call":
            self.names.append(frame.f_code.co_name)


@pytest.fixture
def traced() -> Iterator[CallLog]:
    """This thread traced by a ``CallLog``, and the hooks armed with the interpreter's ``sys.settrace``."""
    log = CallLog()
    previous = sys.gettrace()
    untraced_hooks.arm(sys.settrace)
    sys.settrace(log)
    try:
        yield log
    finally:
        sys.settrace(previous)
        untraced_hooks.disarm()


def ours() -> int:
    return 1


def programs_inner() -> int:
    return 2


def programs_function() -> int:
    return programs_inner()


@untraced_hook
def hook(value: int) -> int:
    return ours() + traced_call(programs_function) + value


@untraced_hook
def nested_hook() -> int:
    return ours()


def programs_function_with_a_hook_inside() -> int:
    return nested_hook() + programs_inner()


@untraced_hook
def hook_around_program() -> int:
    return traced_call(programs_function_with_a_hook_inside)


@untraced_hook
def failing_hook() -> None:
    ours()
    raise ValueError("inside the hook")


def test_a_hook_runs_untraced_and_the_programs_call_inside_it_traced(traced):
    assert hook(10) == 13
    assert sys.gettrace() is traced  # the same tracer is back for the program's next line
    assert "ours" not in traced.names
    assert "programs_function" in traced.names and "programs_inner" in traced.names


def test_a_hook_inside_the_programs_call_inside_a_hook_is_untraced_and_the_rest_traced(traced):
    assert hook_around_program() == 3
    assert sys.gettrace() is traced
    assert "ours" not in traced.names
    assert {"programs_function_with_a_hook_inside", "programs_inner"} <= set(traced.names)


def test_a_hook_that_raises_puts_the_tracer_back(traced):
    with pytest.raises(ValueError):
        failing_hook()
    assert sys.gettrace() is traced
    assert "ours" not in traced.names
    ours()
    assert "ours" in traced.names


def test_disarmed_or_untraced_a_hook_runs_as_it_is():
    log = CallLog()
    previous = sys.gettrace()
    sys.settrace(log)  # a tracer, but not armed: no debugger of ours (the doctor, coverage)
    try:
        assert hook(0) == 3
    finally:
        sys.settrace(previous)
    assert "ours" in log.names and sys.gettrace() is previous
    untraced_hooks.arm(sys.settrace)
    try:
        assert hook(0) == 3  # armed, but nothing traces this thread: nothing is switched
        assert sys.gettrace() is previous
    finally:
        untraced_hooks.disarm()


def test_a_modes_caller_is_the_programs_frame_through_the_hook_wrapper():
    """The wrapper frame sits between torch and a mode's ``__torch_function__``: the op's caller, whose line a warning
    names, is still the program's frame."""
    seen: list[types.FrameType] = []

    @untraced_hook
    def torch_function() -> None:
        seen.append(op_calls.caller_frame(object(), sys._getframe(1)))

    torch_function()
    assert seen[0] is sys._getframe(0)


@pytest.mark.timeout(300)
def test_a_subclass_torch_function_reached_through_the_sentinels_untraced_hook_stops_at_its_breakpoint():
    pytest.importorskip("torch")
    line = marked_lines(SUBCLASS_IN_TRAINING)["subclass"]
    # the sentinel's mode on the stack outside modules (alone: no shape observer's above it), the phase clock on
    options = {"breakOnNonFinite": True, "observeShapes": False}
    with DebugSession.launch(
        SUBCLASS_IN_TRAINING, breakpoints=[(SUBCLASS_IN_TRAINING, line, "Scale.calls == 4")], options=options
    ) as session:
        stop = session.wait_for_stop(timeout=SLOW)
        frame = session.top_frame(stop)
        assert (frame["source"]["path"], frame["line"]) == (SUBCLASS_IN_TRAINING, line)
        # reached from inside our untraced hook (the sentinel's mode), through traced_call (under sys.monitoring the
        # same wrappers, not armed, pass the calls straight on)
        assert session.evaluate(CALLERS, frame["id"])["result"] == "['run_untraced', 'traced_call']"
        assert session.evaluate(ARMED, frame["id"])["result"] == str(SETTRACE_DEBUGGER)
        session.continue_(stop["threadId"])
        assert session.wait_for_exit(timeout=SLOW) == 0
    assert "subclass calls" in session.stdout()


def launch_dataset_tracing(breakpoints: list[tuple[str, int, str | None]], args: list[str]) -> MultiProcessSession:
    return MultiProcessSession.launch(
        program=DATASET_TRACING,
        args=args,
        cwd=str(PROGRAMS),
        breakpoints=breakpoints,
        options={},
        exception_filters=["uncaught"],
        timeout=SLOW,
    )


@pytest.mark.timeout(300)
@pytest.mark.skipif(
    not SETTRACE_DEBUGGER, reason="Python 3.12+: pydevd on sys.monitoring, no settrace tracer to take off a batch"
)
def test_without_breakpoints_batches_are_fetched_untraced_in_the_main_process_and_in_a_worker():
    pytest.importorskip("torch")
    with launch_dataset_tracing([], []) as job:
        # the worker is not attached: with nothing to stop at it starts at once (debugger.forked_start) and may end
        # before an attach could finish (the adapter then answers "disconnected"), as it may in VS Code
        assert job.root.wait_for_exit(timeout=SLOW) == 0
        output = job.root.stdout()
    assert "traced in main 0.00" in output and "traced in worker 0.00" in output


def our_frames(session: DebugSession, stop: dict[str, Any]) -> list[str]:
    """The frames of the stopped thread's Call Stack that are TensorSight's (pydevd must hide them)."""
    paths = [frame.get("source", {}).get("path", "") for frame in session.stack(stop["threadId"])]
    return [path for path in paths if is_agent_file(path)]


@pytest.mark.timeout(300)
def test_with_a_breakpoint_anywhere_batches_are_fetched_traced_and_the_program_stops():
    pytest.importorskip("torch")
    lines = marked_lines(DATASET_TRACING)
    end, getitem = lines["end"], lines["getitem"]
    in_worker = "index == 6 and __import__('torch').utils.data.get_worker_info() is not None"
    with launch_dataset_tracing([(DATASET_TRACING, end, None), (DATASET_TRACING, getitem, in_worker)], []) as job:
        (worker,) = job.wait_for_workers(1, timeout=SLOW)
        stop = worker.wait_for_stop(timeout=SLOW)
        assert worker.top_frame(stop)["line"] == getitem
        assert our_frames(worker, stop) == []  # the fetch wrapper under the dataset's frame stays hidden
        worker.continue_(stop["threadId"])
        stop = job.root.wait_for_stop(timeout=SLOW)
        assert job.root.top_frame(stop)["line"] == end
        job.root.continue_(stop["threadId"])
        assert job.root.wait_for_exit(timeout=SLOW) == 0
        output = job.root.stdout()
    if SETTRACE_DEBUGGER:  # under sys.monitoring sys.gettrace() is None in every frame
        assert "traced in main 1.00" in output and "traced in worker 1.00" in output


@pytest.mark.timeout(300)
def test_a_breakpoint_set_while_a_worker_fetches_untraced_stops_in_its_next_batch():
    pytest.importorskip("torch")
    getitem = marked_lines(DATASET_TRACING)["getitem"]
    with launch_dataset_tracing([], ["--forever"]) as job:
        (worker,) = job.wait_for_workers(1, timeout=SLOW)
        worker.set_breakpoints(DATASET_TRACING, [(getitem, None)])
        stop = worker.wait_for_stop(timeout=60)
        frame = worker.top_frame(stop)
        assert (frame["source"]["path"], frame["line"]) == (DATASET_TRACING, getitem)
        assert our_frames(worker, stop) == []


def test_without_a_debugger_a_batch_is_fetched_as_it_is():
    """The doctor and plain runs: nothing could stop, but no debugger traces either: the fetch runs unchanged."""
    from tensorsight.agent.debugger import untraced_data

    assert untraced_data.nothing_could_stop_here() is False
    before = untraced_data.untraced_batches()
    fetch = untraced_data._untraced_when_quiet(lambda indices: [index * 2 for index in indices])
    assert fetch([1, 2]) == [2, 4]
    assert untraced_data.untraced_batches() == before
