"""Break on NaN/Inf in a real debugpy session: for each example the debugger stops at the line marked `# @nan` (the
first producer), in the user's frame, with a reason naming the op, module, phase and step, and the values in
Variables. One session per example (each costs ~10-20 s with torch)."""

import json
import re
import subprocess

import pytest

from support.dap import DebugSession
from support.paths import PYTHON, example, marked_lines, program

# example -> (title, text in the reason, phase, frame function, step or None when it depends on float dynamics)
EXAMPLES = {
    "nan_lr_too_high.py": ("Inf born here", "from finite inputs", "forward", "<module>", None),
    "nan_log_zero.py": ("Inf born here", "torch.log made", "forward", "bce", None),
    "nan_sqrt_backward.py": (
        "NaN born here",
        "the backward of torch.sqrt (SqrtBackward0) made 1 NaN",
        "backward",
        "forward",
        3,
    ),
    "nan_overflow_inf.py": ("Inf born here", "torch.exp made", "forward", "forward", 4),
}
MODULES = {"nan_sqrt_backward.py": "in CosineClassifier", "nan_overflow_inf.py": "in AttentionPool"}


def check_stop(session, path, stop, title, text, phase, function, step):
    line = marked_lines(path, "@nan")[""]
    assert stop["reason"] == "exception"
    assert stop["text"] == title
    description = stop["description"]
    # the step is a field of the finding, said once at the end of the reason: "... — forward, at file.py:24 (step 5)"
    assert text in description and f"— {phase}, at " in description
    if step is not None:
        assert f"(step {step})" in description
    frame = session.top_frame(stop)
    assert frame["source"]["path"] == path, "the stop must be in the user's file, not in torch or TensorSight"
    assert frame["line"] == line, f"stopped at line {frame['line']}, the NaN is born at line {line}"
    assert frame["name"] == function
    names = [f["source"].get("path", "") for f in session.stack(stop["threadId"])]
    assert not any("/tensorsight/" in name for name in names), "TensorSight's own frames are hidden from the stack"
    info = session.request("exceptionInfo", {"threadId": stop["threadId"]})
    assert info["exceptionId"] == title and info["description"] == description
    record = session.locals(frame["id"])["(nonfinite)"]
    assert title in record["value"]
    children = session.children(record)
    assert {"op", "phase", "step", "output", "inputs", "file", "line"} <= set(children)
    inputs = children["inputs"]
    if inputs["value"] != "()":  # the op's inputs, each by its summary line, never the tuple's repr
        shown = inputs["value"]
        assert "tensor(" not in shown and re.match(r"\d+ (tensor|array)s?: \w+\[", shown), shown
        assert all(re.match(r"\w+\[", row["value"]) for row in session.children(inputs).values())
    assert session.evaluate("tensorsight.last_nonfinite().phase", frame["id"])["result"] == repr(phase)
    reported = int(session.evaluate("tensorsight.last_nonfinite().line", frame["id"])["result"])
    assert reported == line
    return description


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_stops_at_the_first_producer(name):
    title, text, phase, function, step = EXAMPLES[name]
    path = example(name)
    with DebugSession.launch(path, options={"breakOnNonFinite": True}, timeout=90) as session:
        stop = session.wait_for_stop(timeout=120)
        description = check_stop(session, path, stop, title, text, phase, function, step)
        if name in MODULES:
            assert MODULES[name] in description
        if name == "nan_sqrt_backward.py":  # the replayed forward frame: its locals are the values of that step
            frame_id = session.top_frame_id(stop)
            assert session.evaluate("bool((h == 0).all(dim=1).any())", frame_id)["result"] == "True"
        session.continue_(stop["threadId"])
        assert session.wait_for_exit(timeout=120) == 0  # only the first birth stops; the run then goes on
        assert re.search(r"loss nan", session.stdout())


def test_toggle_at_run_time_through_evaluate_without_a_frame():
    """The editor's "Toggle Break on NaN/Inf" sends `tensorsight.break_on_nonfinite(True)` as a DAP evaluate with
    no frame, which debugpy runs on its own thread; the sentinel must then catch the NaN in the training thread."""
    path = example("nan_from_data.py")
    with open(path, encoding="utf-8") as handle:
        start = next(i for i, text in enumerate(handle, start=1) if text.startswith("loader = DataLoader("))
    with DebugSession.launch(path, breakpoints=[(path, start, None)], options={}, timeout=90) as session:
        stop = session.wait_for_stop(timeout=120)
        assert session.top_frame(stop)["line"] == start
        assert session.evaluate("tensorsight.break_on_nonfinite(True)")["result"] == "True"
        session.set_breakpoints(path, [])
        session.continue_(stop["threadId"])
        stop = session.wait_for_stop(timeout=120)
        description = check_stop(
            session,
            path,
            stop,
            "NaN came in here",
            "torch.as_tensor built a tensor with 1 NaN",
            "data",
            "__getitem__",
            3,
        )
        assert "numpy array" in description
        assert session.evaluate("tensorsight.break_on_nonfinite(False)")["result"] == "False"
        session.continue_(stop["threadId"])
        assert session.wait_for_exit(timeout=120) == 0


def test_a_gradient_born_outside_modules_is_shown_on_its_forward_line():
    """Backward runs after the op's line: the stop comes when backward() returns, in the same (still running) frame,
    and is shown on the op's line."""
    path = program("sentinel_outside_backward.py")
    lines = marked_lines(path, "@")
    with DebugSession.launch(path, options={"breakOnNonFinite": True}, timeout=90) as session:
        stop = session.wait_for_stop(timeout=120)
        assert stop["text"] == "Inf born here" and "the backward of torch.sqrt (SqrtBackward0)" in stop["description"]
        frame = session.top_frame(stop)
        assert (frame["source"]["path"], frame["line"], frame["name"]) == (path, lines["nan"], "<module>")
        assert session.evaluate("step", frame["id"])["result"] == "2"
        session.continue_(stop["threadId"])
        assert session.wait_for_exit(timeout=120) == 0


def test_a_debug_session_changes_nothing_the_program_sees(tmp_path):
    """Debug Training with Break on NaN/Inf on: the replay stops at the op inside the model, and after continuing
    the program ends with exactly the state, warnings (file:line) and tensor-subclass calls of a plain run. A
    breakpoint on a line outside modules (where our mode runs the ops) stops once per step, in the user's frame:
    the code we run there at the user's line is hidden from the debugger."""
    path = program("guest_state.py")
    lines = marked_lines(path, "@")
    plain, observed = tmp_path / "plain.json", tmp_path / "observed.json"
    subprocess.run([PYTHON, path, str(plain)], check=True, timeout=120)
    breakpoint_line = lines["torch_warning"]
    stops = []
    with DebugSession.launch(
        path,
        args=[str(observed)],
        breakpoints=[(path, breakpoint_line, None)],
        options={"breakOnNonFinite": True},
        timeout=90,
    ) as session:
        for _ in range(6):
            stop = session.wait_for_stop(timeout=120)
            frame = session.top_frame(stop)
            stops.append((stop["reason"], frame["name"], frame["line"]))
            session.continue_(stop["threadId"])
            if len(stops) == 5:
                break
        assert session.wait_for_exit(timeout=120) == 0
    assert stops[1] == ("exception", "forward", lines["nan"])  # step 2: the replay stops at the op
    assert [s for i, s in enumerate(stops) if i != 1] == [("breakpoint", "<module>", breakpoint_line)] * 4
    assert json.loads(observed.read_text()) == json.loads(plain.read_text())
