"""The first-NaN stop's link to the editor's tensor viewer (agent/sentinel/view_link.py): the tensor it names, the
option it starts from, the reason and console line that carry it, and, in a real debugpy session, the exception
widget's trace that VS Code linkifies and the expression the extension maps the link to."""

import ast
import json
import re
import sys

import torch

from support.dap import DebugSession
from support.paths import marked_lines, program
from tensorsight.agent.runtime import options
from tensorsight.agent.sentinel.record import NonFiniteRecord
from tensorsight.agent.sentinel.records import make_record, report
from tensorsight.agent.sentinel.view_link import stop_reason, tensor_token, view_link
from tensorsight.core.nonfinite import NonFiniteCounts

START = "vscode://tensorsight.tensorsight/viewTensor?session=4f1c-77"
# what the extension evaluates for `tensor=output` (extension/src/panel/tensorLink.ts)
OUTPUT_EXPRESSION = "__import__('tensorsight').last_nonfinite().output"


def record_with(**values) -> NonFiniteRecord:
    return make_record(
        "forward",
        "torch.log",
        NonFiniteCounts(nan=1),
        sys._getframe(),
        what="log made 1 NaN",
        title="NaN born here",
        **values,
    )


def test_the_link_names_the_output_else_the_first_gradient_a_backward_node_made():
    assert tensor_token(record_with(output=torch.zeros(2))) == "output"
    grads = (None, 3.0, torch.zeros(2), torch.zeros(1))
    assert tensor_token(record_with(output=None, produced=grads)) == "produced_grads.2"
    assert tensor_token(record_with(output=(torch.zeros(1),), inputs=(torch.zeros(1),))) is None


def test_the_link_adds_the_token_to_the_editors_start_and_refuses_what_is_not_a_link(capsys):
    assert view_link(START, "output") == START + "&tensor=output"
    assert view_link("code-oss://a.b/viewTensor", "output") == "code-oss://a.b/viewTensor?tensor=output"
    for bad in ("viewTensor?session=1", "vscode://a b", 'vscode://a"b', "x://ab", 42, ""):
        assert view_link(bad, "output") is None
    assert view_link(None, "output") is None


def test_the_reason_ends_with_the_link_only_when_the_editor_gave_one():
    record = record_with(output=torch.full((2, 2), float("nan")))
    options.set_options({})
    try:
        assert stop_reason(record, record.message) == record.message
        options.set_options({"viewTensorLink": START})
        assert stop_reason(record, record.message) == f"{record.message}\nView the tensor: {START}&tensor=output"
        options.set_options({"viewTensorLink": "not a link"})
        assert stop_reason(record, record.message) == record.message
        options.set_options({"viewTensorLink": START})
        assert stop_reason(record_with(output=None), record.message) == record.message  # nothing to show: no link
    finally:
        options.set_options({})


def test_the_debug_console_line_carries_the_link_and_the_doctor_s_does_not(fresh_sentinel, capsys):
    from tensorsight.agent.sentinel.state import sw

    options.set_options({"viewTensorLink": START})
    try:
        sw.origin = "debugger"  # no client is connected: the stop itself does not happen here
        report(record_with(output=torch.zeros(1)), None)
        assert f"\nView the tensor: {START}&tensor=output\n" in capsys.readouterr().err
        assert fresh_sentinel[0]["message"] == sw.last.message and "View the tensor" not in sw.last.message
        sw.first_reported, sw.origin = False, "doctor"
        report(record_with(output=torch.zeros(1)), None)
        assert "View the tensor" not in capsys.readouterr().err
    finally:
        options.set_options({})


def test_the_exception_widget_trace_carries_the_link_and_its_expression_views_the_nan_cells():
    """debugpy repeats the reason at the end of exceptionInfo's stackTrace, the part of VS Code's exception widget
    that its link detector linkifies; the expression the extension maps `tensor=output` to views the op's output."""
    path = program("heteroscedastic.py")
    line = marked_lines(path, "@nan")[""]
    with DebugSession.launch(path, options={"breakOnNonFinite": True, "viewTensorLink": START}, timeout=90) as session:
        stop = session.wait_for_stop(timeout=120)
        assert stop["text"] == "NaN born here"
        frame = session.top_frame(stop)
        assert (frame["line"], frame["name"]) == (line, "gaussian_nll")
        link = f"View the tensor: {START}&tensor=output"
        assert stop["description"].endswith("\n" + link)
        made = int(re.search(r"torch\.log made (\d+) NaN", stop["description"]).group(1))
        info = session.request("exceptionInfo", {"threadId": stop["threadId"]})
        assert info["details"]["stackTrace"].rstrip().endswith(link)
        view = session.evaluate(
            f"__import__('tensorsight').view_tensor(({OUTPUT_EXPRESSION}))", frame["id"], context="clipboard"
        )
        payload = json.loads(ast.literal_eval(view["result"]))
        assert payload["counts"]["nan"] == made >= 1 and payload["kind"] == "heatmap", payload["counts"]
        session.continue_(stop["threadId"])
        assert session.wait_for_exit(timeout=120) == 0
