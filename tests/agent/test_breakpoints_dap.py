"""Tensor breakpoints in a real debugpy session: each predicate stops at the step where it first holds; a condition
on an undefined name (which debugpy ignores silently) is flagged by core.conditions; misuse shows in the console."""

from support.dap import DebugSession
from support.paths import marked_lines, program
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
}
NEVER = {
    "undefined": "tensorsight.nan(los)",  # a typo: NameError inside debugpy, silently false
    "misuse": 'tensorsight.nan("probe")',  # a string, not a tensor: False, and one line in the Debug Console
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
    # the misused predicate explained itself once, at its line, instead of silently never firing
    assert output.count("tensorsight.nan(...) at conditions_training.py:") == 1
    assert f"conditions_training.py:{lines['misuse']}: expected a tensor" in output


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
