"""``agent.debugger.conditions``: a bad breakpoint condition compiled once, evaluated as pydevd would, said once.

The parts below need no debugger: compiling and caching a condition, evaluating it in a real frame through a
breakpoint object shaped like pydevd's, the editor validator's wording, and when the hook takes over. The wrapped
``PyDB.handle_breakpoint_condition`` in a real debugpy session is covered by
tests/agent/conditions/test_breakpoints_dap.py.
"""

from __future__ import annotations

import sys
import types

import pytest

from tensorsight.agent.debugger import conditions
from tensorsight.agent.runtime import events, guard
from tensorsight.core.conditions import ConditionCheck


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(conditions, "_compiled", {})
    monkeypatch.setattr(conditions, "_reported", set())
    monkeypatch.setattr(guard, "_reported", set())


class Breakpoint:
    """The two things pydevd's breakpoint offers the hook: its condition text and its hit-count check."""

    def __init__(self, condition, hit=False):
        self.condition = condition
        self.hit = hit
        self.hit_checks = 0

    def handle_hit_condition(self, frame):
        self.hit_checks += 1
        return self.hit


class DAPDebugger:
    skip_suspend_on_breakpoint_exception = (BaseException,)


def condition_errors():
    seen: list[dict] = []
    unsubscribe = events.subscribe(lambda event: seen.append(event) if event["type"] == "condition-error" else None)
    return seen, unsubscribe


def test_a_condition_is_compiled_once_per_text():
    first = conditions._compile("loss > 1")
    assert isinstance(first, types.CodeType) and first.co_filename == "<string>"
    assert conditions._compile("loss > 1") is first
    assert conditions._compile("  loss > 1") is not first  # another text, another entry


def test_a_syntax_error_is_kept_in_words():
    assert conditions._compile("loss >") == "invalid syntax"
    assert isinstance(conditions._compile("x\0"), str)  # a NUL byte: ValueError, not SyntaxError


def test_the_compiled_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(conditions, "MAX_COMPILED", 2)
    for n in range(5):
        conditions._compile(f"x > {n}")
    assert len(conditions._compiled) == 2
    assert isinstance(conditions._compile("x > 4"), types.CodeType)  # still compiled, just not kept


def test_evaluate_gives_the_condition_value_in_the_frame():
    loss = 3.0
    frame = sys._getframe()
    assert conditions.evaluate(Breakpoint("loss > 1"), frame) is True
    assert conditions.evaluate(Breakpoint("loss > 10"), frame) is False
    assert conditions.evaluate(Breakpoint("loss * 2"), frame) == 6.0
    assert loss == 3.0


def test_the_hit_condition_comes_first():
    breakpoint_ = Breakpoint("undefined_name > 0", hit=True)
    seen, unsubscribe = condition_errors()
    try:
        assert conditions.evaluate(breakpoint_, sys._getframe()) is True
    finally:
        unsubscribe()
    assert breakpoint_.hit_checks == 1 and seen == []


def test_an_undefined_name_is_false_and_said_once_in_the_validators_words(capsys):
    frame = sys._getframe()
    seen, unsubscribe = condition_errors()
    try:
        # the same breakpoint line hit three times (the frame's line is read while evaluating)
        results = [(conditions.evaluate(Breakpoint("lsos > 1"), frame), frame.f_lineno) for _ in range(3)]
    finally:
        unsubscribe()
    line = results[0][1]
    assert results == [(False, line)] * 3
    sentence = ConditionCheck(undefined=("lsos",)).message(line)
    assert len(seen) == 1
    assert seen[0]["expression"] == "lsos > 1"
    assert seen[0]["location"] == f"test_condition_hook.py:{line}"
    assert seen[0]["message"] == f"breakpoint condition `lsos > 1` at {seen[0]['location']}: {sentence}"
    assert capsys.readouterr().err.count("`lsos` is not defined") == 1


def test_a_syntax_error_is_false_and_said_once():
    seen, unsubscribe = condition_errors()
    try:
        results = [conditions.evaluate(Breakpoint("x >"), sys._getframe()) for _ in range(2)]  # one line, two hits
    finally:
        unsubscribe()
    assert results == [False, False]
    assert len(seen) == 1
    assert seen[0]["message"].endswith(ConditionCheck(syntax_error="invalid syntax").message(0))


def test_other_errors_are_named_with_what_debugpy_does():
    values = []  # noqa: F841 - read by the condition
    assert "IndexError" in conditions._explain(IndexError("list index out of range"), 5)
    seen, unsubscribe = condition_errors()
    try:
        assert conditions.evaluate(Breakpoint("values[3] > 0"), sys._getframe()) is False
    finally:
        unsubscribe()
    assert seen[0]["message"].endswith(
        "it raised IndexError: list index out of range; debugpy treats the condition as false and does not stop."
    )


def test_an_unknown_tensorsight_helper_is_named_as_such(monkeypatch):
    helpers = types.SimpleNamespace(nan=lambda x: False)
    monkeypatch.setattr("builtins.tensorsight", helpers, raising=False)
    try:
        helpers.nann  # noqa: B018 - the AttributeError the condition would raise
    except AttributeError as exc:
        error = exc
    assert conditions._explain(error, 9) == ConditionCheck(unknown_helpers=("tensorsight.nann",)).message(9)


def test_an_unbound_local_is_not_called_undefined():
    message = conditions._explain(UnboundLocalError("cannot access local variable 'x'"), 3)
    assert message.startswith("it raised UnboundLocalError")


def test_the_hook_takes_over_only_text_conditions_in_dap_mode():
    dap = DAPDebugger()
    assert conditions._takes_over(dap, Breakpoint("x > 1"))
    assert not conditions._takes_over(dap, Breakpoint("   "))
    assert not conditions._takes_over(dap, Breakpoint(None))
    assert not conditions._takes_over(types.SimpleNamespace(skip_suspend_on_breakpoint_exception=()), Breakpoint("x"))
    assert not conditions._takes_over(dap, types.SimpleNamespace(condition="x"))  # no hit-count API: pydevd's own


def test_watch_conditions_wraps_pydevd_once_and_leaves_the_rest_to_pydevd(monkeypatch):
    original_calls = []

    class PyDB:
        skip_suspend_on_breakpoint_exception = ()

        def handle_breakpoint_condition(self, info, pybreakpoint, new_frame):
            original_calls.append(pybreakpoint)
            return "pydevd's answer"

    original = PyDB.handle_breakpoint_condition
    monkeypatch.setitem(sys.modules, "pydevd", types.SimpleNamespace(PyDB=PyDB))
    assert conditions.watch_conditions() is True
    wrapped = PyDB.handle_breakpoint_condition
    assert wrapped is not original and wrapped.tensorsight_original is original
    assert conditions.watch_conditions() is True and PyDB.handle_breakpoint_condition is wrapped

    not_dap = PyDB()
    breakpoint_ = Breakpoint("x > 1")
    assert not_dap.handle_breakpoint_condition(None, breakpoint_, sys._getframe()) == "pydevd's answer"
    assert original_calls == [breakpoint_]

    dap = PyDB()
    dap.skip_suspend_on_breakpoint_exception = (BaseException,)
    x = 2  # noqa: F841 - read by the condition
    assert dap.handle_breakpoint_condition(None, Breakpoint("x > 1"), sys._getframe()) is True
    assert original_calls == [breakpoint_]


def test_without_pydevd_nothing_is_wrapped(monkeypatch):
    monkeypatch.delitem(sys.modules, "pydevd", raising=False)
    assert conditions.watch_conditions() is False
    monkeypatch.setitem(sys.modules, "pydevd", types.SimpleNamespace(PyDB=object))
    assert conditions.watch_conditions() is False  # an API change: leave pydevd alone
