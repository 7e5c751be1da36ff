"""Heavy frames under a real debugpy session: every Variables request answers within pydevd's patience.

tests/programs/frame_heavy.py pauses in three frames: a 1e8-element float32 tensor with one NaN, a module with
10,000 parameter tensors, a dict of 1000 tensors. Each Variables (and hover) answer must come back with lines that
are right, or marked as partial where the time budget made them stop (``≈`` for a sample, "figures on expand",
"(σ, range on expand)" after a one-pass alarm and mean, "scanned … of …, rest on expand"), with the alarm in the
first 40 characters and the rest given by the expand; pydevd must never have printed "Resolving variable children
is taking too long"; and the program must find its tensors unchanged. No timed assertions: speed is measured in
benchmarks/bench_summary.py.
"""

import re

from support.dap import DebugSession
from support.paths import marked_lines, program

PARTIAL = ("≈", "on expand", "scanned ")
FIGURES = re.compile(r" μ=-?[\d.e+-]+ σ=[\d.e+-]+ \[-?[\d.e+-]+, -?[\d.e+-]+\]")


def partial(line):
    return any(mark in line for mark in PARTIAL)


def assert_exact_or_marked(line, prefix, alarm=None):
    assert line.startswith(prefix), line
    if partial(line):
        return
    assert FIGURES.search(line), line
    if alarm is not None:
        assert alarm in line, line


def test_heavy_frames_answer_with_right_or_marked_lines():
    path = program("frame_heavy.py")
    lines = marked_lines(path)
    breakpoints = [(path, lines[name], None) for name in ("big", "model", "dict")]
    with DebugSession.launch(path, breakpoints=breakpoints, timeout=180) as session:
        stop = session.wait_for_stop(timeout=180)
        frame_id = session.top_frame_id(stop)
        big = session.locals(frame_id)["big"]
        assert_exact_or_marked(big["value"], "f32[100000000] cpu ", alarm="⚠ NaN×1 ")
        if "figures on expand" not in big["value"]:  # a line with figures always carries the alarm, up front
            assert "⚠ NaN×1" in big["value"][:40], big["value"]
        hover = session.evaluate("big", frame_id, "hover")["result"]
        assert_exact_or_marked(hover, "f32[100000000] cpu ", alarm="⚠ NaN×1 ")
        stats_row = session.children(big)["stats"]
        stats = session.children(stats_row)
        assert stats["nan"]["value"] == "1" or stats["exact"]["value"].startswith("no: estimated")
        assert re.match(r"min=-?[\d.e+-]+ max=[\d.e+-]+ mean≈?=-?[\d.e+-]+ std≈?=[\d.e+-]+$", stats_row["value"])
        session.continue_(stop["threadId"])

        stop = session.wait_for_stop(timeout=180)
        frame_id = session.top_frame_id(stop)
        model = session.locals(frame_id)["model"]
        line = model["value"]
        assert line.startswith("ParameterList cpu f32"), line
        assert "⚠" not in line
        assert re.search(r" grad norm=\d", line) or re.search(r"scanned [\d.K]+ of 10K tensors", line), line
        children = session.children(model)
        assert children["(params)"]["value"] == "640000"
        if "(scan)" in children:  # the expand went on with the scan; if even that stopped, it says how far it got
            assert re.match(r"[\d,]+ of 10,000 tensors scanned for NaN/Inf so far", children["(scan)"]["value"])
        else:
            assert re.match(r"\d", children["(grad norm)"]["value"]), children["(grad norm)"]
        assert "(more)" in children and children["(more)"]["value"].startswith("… 9,500 more")
        listed = [v["value"] for name, v in children.items() if name.isdigit()]
        assert len(listed) == 500
        for value in listed:
            assert_exact_or_marked(value, "f32[64] cpu ")
        session.continue_(stop["threadId"])

        stop = session.wait_for_stop(timeout=180)
        frame_id = session.top_frame_id(stop)
        entries = session.children(session.locals(frame_id)["tensors"])
        values = {name.strip("'"): v["value"] for name, v in entries.items() if name.strip("'").startswith("t")}
        assert len(values) >= 500  # pydevd lists the first 500 items of a container
        for name, value in values.items():
            assert_exact_or_marked(value, "f32[20000] cpu ", alarm="⚠ +Inf×1 " if name == "t0500" else None)
            if name != "t0500":
                assert "⚠" not in value, (name, value)
        session.continue_(stop["threadId"])
        session.wait_for_exit(timeout=180)
        output = session.stdout()
    for frame in ("big", "model", "dict"):
        assert f"STATE {frame} OK" in output, output
    assert "taking too long" not in output, output
    assert "[tensorsight]" not in output, output
