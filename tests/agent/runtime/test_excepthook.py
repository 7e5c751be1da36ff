"""``agent.runtime.excepthook``: explainers turn an exception into findings; the debugger-only hook publishes them."""

from __future__ import annotations

import sys

import pytest

from tensorsight.agent.runtime import events, excepthook, guard
from tensorsight.core.findings import Finding


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(excepthook, "_explainers", [])
    monkeypatch.setattr(excepthook, "_hook_installed", False)
    monkeypatch.setattr(guard, "_reported", set())
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # restored after each test


def explain_value_errors(exc):
    if isinstance(exc, ValueError):
        return [Finding("shape", "error", f"explained: {exc}", "train.py", 7)]
    return None


def published_events():
    seen: list[dict] = []
    return seen, events.subscribe(seen.append)


def test_explain_collects_what_the_explainers_recognise():
    excepthook.register_explainer(explain_value_errors)
    excepthook.register_explainer(explain_value_errors)  # registered once
    assert [f.message for f in excepthook.explain(ValueError("bad"))] == ["explained: bad"]
    assert excepthook.explain(KeyError("other")) == []


def test_a_failing_explainer_is_skipped_and_reported_once(capsys):
    def broken(exc):
        raise RuntimeError("explainer bug")

    excepthook.register_explainer(broken)
    excepthook.register_explainer(explain_value_errors)
    assert len(excepthook.explain(ValueError("a"))) == 1
    assert len(excepthook.explain(ValueError("b"))) == 1
    assert capsys.readouterr().err.count("explainer bug") == 1


def test_the_hook_publishes_findings_and_chains_to_the_previous_hook(monkeypatch):
    previous_calls = []
    monkeypatch.setattr(sys, "excepthook", lambda *args: previous_calls.append(args))
    excepthook.register_explainer(explain_value_errors)
    seen, unsubscribe = published_events()
    try:
        excepthook.arm("debugger")
        excepthook.arm("debugger")  # idempotent: one hook, not a chain of ours
        error = ValueError("mat1 and mat2")
        sys.excepthook(ValueError, error, error.__traceback__)
    finally:
        unsubscribe()
    assert previous_calls == [(ValueError, error, error.__traceback__)]
    findings = [e["finding"] for e in seen if e["type"] == "finding"]
    assert [f["message"] for f in findings] == ["explained: mat1 and mat2"]
    assert findings[0]["file"] == "train.py" and findings[0]["line"] == 7


def test_the_hook_still_chains_when_explaining_fails(monkeypatch, capsys):
    previous_calls = []
    monkeypatch.setattr(sys, "excepthook", lambda *args: previous_calls.append(args[0]))
    monkeypatch.setattr(excepthook, "explain", lambda exc: 1 / 0)
    excepthook.install_excepthook()
    sys.excepthook(KeyError, KeyError("k"), None)
    assert previous_calls == [KeyError]
    assert "explaining the uncaught exception failed" in capsys.readouterr().err


def test_outside_the_debugger_no_hook_is_installed():
    before = sys.excepthook
    excepthook.arm("doctor")
    assert sys.excepthook is before
