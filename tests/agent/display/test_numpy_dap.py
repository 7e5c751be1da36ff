"""numpy without torch in a real debugpy session, with pyhelpers injected on PYTHONPATH as the extension does: the
array summary, curated children (ours, not pydevd's numpy resolver), a ``tensorsight.nan`` condition and the
summary in every evaluate context. Marked ``numpy_only``: scripts/test.sh runs it under Python 3.10, 3.12 and 3.13
too (pydevd's ``sys.monitoring`` path from 3.12 on)."""

import pytest

from support.dap import DebugSession
from support.paths import marked_lines, program

pytestmark = pytest.mark.numpy_only

GRID = "f64[3, 4] ndarray μ=5.5 σ=3.61 [0, 11]"


def test_numpy_summaries_children_and_nan_condition():
    path = program("numpy_steps.py")
    line = marked_lines(path)[""]
    with DebugSession.launch(path, breakpoints=[(path, line, "tensorsight.nan(roots)")]) as session:
        stop = session.wait_for_stop()
        frame_id = session.top_frame_id(stop)
        local = session.locals(frame_id)
        assert local["step"]["value"] == "2"  # roots hold a NaN at step 2 only
        assert local["grid"]["value"] == GRID
        assert local["roots"]["value"].startswith("f64[2] ndarray ⚠ NaN×1 [1.414, nan]")
        children = session.children(local["grid"])
        assert list(children)[:4] == ["shape", "dtype", "stats", "memory"]
        assert children["shape"]["value"] == "(3, 4)"
        for context in ("hover", "watch", "repl"):
            assert session.evaluate("grid", frame_id, context)["result"] == GRID, context
        session.continue_(stop["threadId"])
        assert session.wait_for_exit() == 0
    assert "done 7.222" in session.stdout()
