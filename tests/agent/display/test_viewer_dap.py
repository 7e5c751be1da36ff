"""View Tensor in a real debugpy session: the extension's evaluate of ``tensorsight.view_tensor(expr)`` at a stop
answers the viewer's JSON, with exact NaN/Inf counts and NaN cells that survive pooling, and leaves the tensor as it
was."""

import ast
import json

from support.dap import DebugSession
from support.paths import marked_lines, program


def test_view_tensor_evaluates_at_a_stop() -> None:
    path = program("viewer_nan.py")
    line = marked_lines(path)[""]
    with DebugSession.launch(path, breakpoints=[(path, line, None)]) as session:
        stop = session.wait_for_stop()
        frame_id = session.top_frame_id(stop)
        answer = session.evaluate("tensorsight.view_tensor(weights)", frame_id, "clipboard")["result"]
        payload = json.loads(ast.literal_eval(answer))
        assert payload["kind"] == "heatmap"
        assert payload["counts"]["nan"] == 2 and payload["counts"]["posinf"] == 1
        heat = payload["heatmap"]
        assert heat["marks"][10 // heat["blockRows"]][20 // heat["blockCols"]] == 1
        assert heat["marks"][-1][-1] == 1
        session.continue_(stop["threadId"])
        assert session.wait_for_exit() == 0
    assert "done True" in session.stdout()
