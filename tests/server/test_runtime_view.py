"""The runtime view (pure): how agent events turn into what the editor shows, and which events it refuses."""

from __future__ import annotations

import math

from tensorsight.core.protocol import json_safe
from tensorsight.server.runtime_view import NO_RUN_TITLE, RuntimeView

FILE = "/project/train.py"


def shape(line: int, text: str, name: str | None = "x", step: int = 0) -> dict:
    event = {"type": "shape", "file": FILE, "line": line, "text": text, "step": step, "dtype": "float32"}
    if name:
        event["name"] = name
    return event


def test_shapes_keep_the_last_text_and_the_distinct_ones_seen():
    view = RuntimeView()
    view.start_session("s")
    assert view.apply("s", shape(3, "f32[64, 16]")).hints == {FILE}
    view.apply("s", shape(3, "f32[32, 16]", step=9))
    view.apply("s", shape(3, "f32[64, 16]", step=10))
    (seen,) = view.inlay_hints(FILE)
    assert (seen.text, seen.step, seen.count) == ("f32[64, 16]", 10, 3)
    assert seen.texts == ["f32[32, 16]", "f32[64, 16]"]
    hover = view.hover(FILE, 3, "x")
    assert hover is not None and "`f32[64, 16]`" in hover and "step 10" in hover and "f32[32, 16]" in hover
    assert view.hover(FILE, 3, "other") is None


def _birth(op: str, step: int) -> list[dict[str, object]]:
    """What the agent sends for one NaN/Inf birth: its facts (for the hover), then its own finding."""
    facts = {"type": "nonfinite", "file": FILE, "line": 12, "op": op, "step": step, "nan": 0, "posinf": 1}
    message = f"Inf born here: {op} made 1 +Inf (of 4 values) from finite inputs — forward"
    finding = {"kind": "nonfinite", "severity": "error", "message": message, "file": FILE, "line": 12, "step": step}
    return [facts, {"type": "finding", "finding": {**finding, "details": {"op": op, "code": "nonfinite"}}}]


def test_the_first_nan_origin_wins_over_later_propagation_and_its_text_is_the_agents():
    view = RuntimeView()
    view.start_session("s")
    facts, finding = _birth("div", 4)
    assert view.apply("s", facts).diagnostics == set(), "the facts alone make no diagnostic: the agent's finding does"
    assert view.apply("s", finding).diagnostics == {FILE}
    for event in _birth("mul", 7):
        assert view.apply("s", event).diagnostics == set()
    (shown,) = view.diagnostics(FILE)
    assert shown.kind == "nonfinite" and shown.severity == "error" and shown.step == 4
    assert shown.message == finding["finding"]["message"]  # relayed as the agent wrote it
    assert "first NaN/Inf" in (view.hover(FILE, 12, None) or "")


def test_findings_are_deduplicated_and_validated():
    view = RuntimeView()
    view.start_session("s")
    finding = {"kind": "dynamics", "severity": "warning", "message": "loss diverged", "file": FILE, "line": 5}
    assert view.apply("s", {"type": "finding", "finding": finding}).diagnostics == {FILE}
    assert view.apply("s", {"type": "finding", "finding": finding}).diagnostics == {FILE}
    assert len(view.diagnostics(FILE)) == 1
    bad = view.apply("s", {"type": "finding", "finding": {**finding, "kind": "nonsense"}})
    assert bad.error is not None and "malformed finding" in bad.error


def test_malformed_events_change_nothing():
    view = RuntimeView()
    view.start_session("s")
    for event in (
        {"type": "shape", "file": FILE, "line": "3", "text": "f32[1]"},
        {"type": "shape", "file": FILE, "line": 0, "text": "f32[1]"},
        {"type": "shape", "file": "", "line": 3, "text": "f32[1]"},
        {"type": "phases", "step": 1, "seconds": {"forward": "fast"}},
        {"type": "phases", "step": 1, "seconds": {"forward": float("nan")}},
        {"type": "nonfinite", "file": FILE},
        {"type": "hello"},
        {"no": "type"},
    ):
        assert view.apply("s", event).error is not None, event
    assert view.inlay_hints(FILE) == [] and view.diagnostics(FILE) == []
    assert view.apply("unknown-session", shape(1, "f32[1]")).error is not None
    assert view.apply("s", {"type": "some-future-event", "x": 1}).error is None  # unknown types are ignored


def test_phases_accumulate_then_the_summary_replaces_them():
    view = RuntimeView()
    view.start_session("s")
    loop = [(10, 20)]
    assert view.code_lenses(FILE, loop) == [(10, NO_RUN_TITLE)]
    for step in (1, 2):
        event = {"type": "phases", "step": step, "file": FILE, "line": 12}
        event["seconds"] = {"data": 0.01, "forward": 0.02, "backward": 0.06, "optimizer": 0.01, "other": 0.0}
        assert view.apply("s", event).lenses
    ((line, title),) = view.code_lenses(FILE, loop)
    assert line == 10 and "forward 20%" in title and "backward 60%" in title and "100.0 ms/step" in title
    summary = {"type": "phase-summary", "steps": 4, "file": FILE, "line": 12}
    summary["seconds"] = {"data": 0.2, "forward": 0.1, "backward": 0.1, "optimizer": 0.0, "other": 0.0}
    view.apply("s", summary)
    ((_, title),) = view.code_lenses(FILE, loop)
    assert "data 50%" in title and "100.0 ms/step (4 steps)" in title
    late = {"type": "phases", "step": 9, "file": FILE, "line": 12, "seconds": {"data": 9.0}}
    view.apply("s", late)
    assert view.code_lenses(FILE, loop)[0][1] == title  # the run's own summary is final


def test_phases_without_a_location_belong_to_the_run_script():
    view = RuntimeView()
    view.start_session("s")
    view.apply("s", {"type": "hello", "pid": 7, "script": FILE})
    view.apply("s", {"type": "phases", "step": 1, "seconds": {"forward": 0.5, "backward": 0.5}})
    assert "forward 50%" in view.code_lenses(FILE, [(3, 9)])[0][1]
    assert view.code_lenses("/elsewhere.py", [(3, 9)]) == [(3, NO_RUN_TITLE)]


def test_a_new_run_replaces_the_last_one_but_not_a_live_one():
    view = RuntimeView()
    view.start_session("first")
    view.apply("first", shape(3, "f32[1]"))
    view.start_session("second")  # both live (e.g. two ranks' sessions): nothing cleared
    assert view.inlay_hints(FILE)
    view.end_session("first")
    view.end_session("second")
    assert view.status() == {"sessions": 0, "state": "idle", "details": []}
    touched = view.start_session("third")
    assert view.inlay_hints(FILE) == [] and touched == {FILE}
    view.apply("third", {"type": "hello", "pid": 9, "script": FILE})
    assert view.status()["state"] == "connected"
    view.apply("third", {"type": "bye", "pid": 9, "dropped": 3})
    status = view.status()
    assert status["state"] == "waiting" and status["details"][0]["dropped"] == 3


def test_json_safe_makes_non_finite_numbers_strings():
    value = {"loss": math.nan, "values": [math.inf, -math.inf, 1.5], "n": 3}
    assert json_safe(value) == {"loss": "NaN", "values": ["Infinity", "-Infinity", 1.5], "n": 3}


def test_the_live_lens_leaves_the_first_step_out_once_three_more_are_in():
    """The first step pays for start-up (seconds of "other"): like the run's summary, the lens of a run in progress
    leaves it out once three later steps are measured, instead of saying "other 95%" for most of the run. The
    training panel counts the same way (runStore.ts, core.phases.PhaseTally), so lens and panel agree."""
    view = RuntimeView()
    view.start_session("s")
    loop = [(10, 20)]
    start_up = {"data": 0.0, "forward": 0.1, "backward": 0.1, "optimizer": 0.0, "other": 5.8}
    steady = {"data": 0.0, "forward": 0.05, "backward": 0.05, "optimizer": 0.0, "other": 0.0}
    titles = []
    for step in (1, 2, 3, 4):
        seconds = start_up if step == 1 else steady
        view.apply("s", {"type": "phases", "step": step, "file": FILE, "line": 12, "seconds": seconds})
        titles.append(view.code_lenses(FILE, loop)[0][1])
    assert "6000.0 ms/step (step 1)" in titles[0] and "other 97%" in titles[0]
    assert "3050.0 ms/step (step 2)" in titles[1]  # too few steps yet: the first one still counts
    assert "2066.7 ms/step (step 3)" in titles[2]
    assert "other 0%" in titles[3] and "forward 50%" in titles[3] and "100.0 ms/step (step 4)" in titles[3]
