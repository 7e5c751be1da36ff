"""Tensor breakpoints in a real debugpy session: each predicate stops at the step where it first holds; a condition
on an undefined name (which debugpy ignores silently) is flagged by core.conditions and, at run time, said once in
the Debug Console, as are a syntax error, an unknown helper and a condition that raises; misuse shows in the console;
a tensor subclass's ``__torch_function__`` is never run by a predicate."""

import subprocess

from support.dap import DebugSession
from support.paths import PYTHON, marked_lines, program
from tensorsight.core.conditions import validate_condition

# marker -> (condition, loop step at which it must first stop)
CONDITIONS = {
    "nan": ("tensorsight.nan(probe)", 3),
    "inf": ("tensorsight.inf(limit)", 5),
    "nonfinite": ("tensorsight.nonfinite(limit) or tensorsight.nonfinite([probe])", 3),
    "spike": ("tensorsight.spike(level, 3)", 7),
    "grad_norm": ("tensorsight.grad_norm(model) > 1e3", 4),
    "shape_is": ("not tensorsight.shape_is(activations, (8, None))", 6),
    "wrong_device": ("tensorsight.wrong_device(model, placed)", 8),
    "zero": ("tensorsight.zero(dead)", 9),
    "exploding": ("tensorsight.exploding(batch, 1e3)", 4),
    "changed": ("tensorsight.changed(phase)", 5),
    "grad_missing": ("tensorsight.grad_missing(model)", 6),
    "on_rank": ("tensorsight.on_rank(0) and tensorsight.step() > 2", 2),  # step(): completed steps + 1
    "subclass": ("tensorsight.nan(masked)", 3),  # its __torch_function__ would hide the NaN
}
NEVER = {
    "undefined": "tensorsight.nan(los)",  # a typo: NameError inside debugpy, silently false
    "misuse": 'tensorsight.nan("probe")',  # a string, not a tensor: False, and one line in the Debug Console
    "misused_number": "tensorsight.grad_norm(42)",  # a bare numeric predicate on misuse: falsy, never stops
    "syntax": "tensorsight.nan(probe) and",
    "helper": "tensorsight.nann(probe)",
    "raises": "1 / (step - step) > 0",
}


def test_each_predicate_stops_at_its_step_in_a_real_session():
    path = program("conditions_training.py")
    lines = marked_lines(path)
    armed = {lines[name]: (name, cond) for name, (cond, _) in CONDITIONS.items()}
    never = {lines[name]: cond for name, cond in NEVER.items()}
    every = [(path, line, cond) for line, (_, cond) in armed.items()] + [(path, line, c) for line, c in never.items()]
    stopped_at: dict[str, int] = {}
    with DebugSession.launch(path, breakpoints=every, timeout=90) as session:
        while armed:
            stop = session.wait_for_stop(timeout=90)
            frame = session.top_frame(stop)
            assert frame["line"] in armed, f"stopped at line {frame['line']}, which has no predicate that should fire"
            name, _ = armed.pop(frame["line"])
            stopped_at[name] = int(session.evaluate("step", frame["id"])["result"])
            if name == "grad_norm":  # the number behind the condition is visible in the session too
                assert float(session.evaluate("tensorsight.grad_norm(model)", frame["id"])["result"]) > 1e3
            # a breakpoint that fired has done its job: keep the others (and the ones that must never fire)
            remaining = [(line, cond) for line, (_, cond) in armed.items()] + list(never.items())
            session.set_breakpoints(path, remaining)
            session.continue_(stop["threadId"])
        assert session.wait_for_exit(timeout=90) == 0
        output = session.stdout()
    assert stopped_at == {name: step for name, (_, step) in CONDITIONS.items()}
    assert "done" in output
    # the misused predicates explained themselves once, at their line, instead of silently never firing
    assert output.count("tensorsight.nan(...) at conditions_training.py:") == 1
    assert f"conditions_training.py:{lines['misuse']}: expected a tensor" in output
    assert output.count(f"tensorsight.grad_norm(...) at conditions_training.py:{lines['misused_number']}:") == 1
    # a condition that cannot run is said once in the editor validator's words, not as a traceback at every hit
    said = {
        "undefined": f"`los` is not defined at line {lines['undefined']}",
        "syntax": "The condition is not a valid Python expression: invalid syntax",
        "helper": "`tensorsight.nann` is not a TensorSight helper",
        "raises": "it raised ZeroDivisionError: division by zero",
    }
    for name, words in said.items():
        intro = f"breakpoint condition `{NEVER[name]}` at conditions_training.py:{lines[name]}: "
        assert output.count(intro) == 1, (name, output)
        assert intro + words in output, (name, output)
    assert "Error while evaluating expression" not in output and "Traceback" not in output
    # the predicates never ran the subclass's __torch_function__: the count is the plain run's
    plain = subprocess.run([PYTHON, path], capture_output=True, text=True, timeout=120, check=True).stdout
    assert "torch_function calls: 0" in plain and "torch_function calls: 0" in output


def test_condition_on_an_undefined_name_is_flagged():
    path = program("conditions_training.py")
    lines = marked_lines(path)
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    flagged = validate_condition(source, lines["undefined"], NEVER["undefined"])
    assert flagged["undefinedNames"] == ["los"]
    assert f"`los` is not defined at line {lines['undefined']}" in flagged["message"]
    for name, (condition, _) in CONDITIONS.items():
        assert validate_condition(source, lines[name], condition)["undefinedNames"] == [], name
