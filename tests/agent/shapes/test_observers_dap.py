"""Observers: shapes per user line, silent broadcasting, module devices, shape-error explanations.

The sampling and hook behaviour is checked in a subprocess (tests/programs/agent_events.py prints the agent's events)
so global torch hooks never leak into this test process; the explanations are checked in-process on real torch
errors; two real debugpy sessions check that the same events and findings are published in a debug session.
"""

import ast
import json
import os
import subprocess

import pytest
import torch
from torch import nn

from support.dap import DebugSession
from support.paths import PYHELPERS, PYTHON, example, marked_lines, program
from tensorsight.agent.shapes import shape_errors

HERE = os.path.abspath(__file__)


def run_events(script: str, options: dict) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": PYHELPERS}
    proc = subprocess.run(
        [PYTHON, program("agent_events.py"), json.dumps(options), script],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def sampled_events():
    options = {"observeShapes": True, "observeShapesEvery": 10, "checkLeakage": False, "measure": False}
    return run_events(program("shapes_program.py"), options)


def shapes_by_line(events: list[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for event in events:
        if event["type"] == "shape":
            out.setdefault(event["line"], []).append(event)
    return out


def test_shape_events_name_the_assigned_values(sampled_events):
    lines = marked_lines(program("shapes_program.py"), "@line")
    shapes = shapes_by_line(sampled_events)
    assert shapes[lines["X"]][0]["text"] == "f32[512, 8]" and shapes[lines["X"]][0]["name"] == "X"
    hidden = shapes[lines["hidden"]][0]
    assert (hidden["name"], hidden["text"], hidden["shape"], hidden["dtype"], hidden["device"]) == (
        "h",
        "f32[32, 16]",
        [32, 16],
        "float32",
        "cpu",
    )
    batch = shapes[lines["batch"]][0]
    assert batch["name"] == "xb, yb" and batch["text"] == "f32[32, 8], f32[32]"
    assert [v["name"] for v in batch["values"]] == ["xb", "yb"]
    assert shapes[lines["pred"]][0]["text"] == "f32[32, 1]"  # a module call on a user line
    assert shapes[lines["loss"]][0]["text"] == "f32[]"
    # constructing modules and stepping the optimizer produce no hints
    assert lines["init"] not in shapes and lines["step"] not in shapes
    # each line is published once while its shape does not change
    assert len(shapes[lines["batch"]]) == 1


def test_sampling_windows_first_steps_then_every_n(sampled_events):
    lines = marked_lines(program("shapes_program.py"), "@line")
    shapes = shapes_by_line(sampled_events)
    assert lines["unsampled"] not in shapes  # step 5: between windows
    resampled = shapes[lines["resampled"]][0]  # step 10: observeShapesEvery=10 reopens a window
    assert resampled["text"] == "f32[32, 2]" and resampled["step"] == 10


def test_silent_broadcast_and_module_device_findings(sampled_events):
    lines = marked_lines(program("shapes_program.py"), "@line")
    findings = [e["finding"] for e in sampled_events if e["type"] == "finding"]
    by_kind = {f["kind"]: [g for g in findings if g["kind"] == f["kind"]] for f in findings}
    (broadcast,) = by_kind["shape"]
    assert broadcast["line"] == lines["broadcast"] and broadcast["severity"] == "warning"
    assert broadcast["details"]["shapes"] == [[32, 1], [32]] and broadcast["details"]["result"] == [32, 32]
    assert "[32, 1] and [32] silently broadcast to [32, 32]" in broadcast["message"]
    (device,) = by_kind["device"]
    assert device["line"] == lines["meta"] and device["severity"] == "error"
    assert "meta device" in device["message"] and device["details"]["input_device"] == "cpu"


def test_shape_map_event_of_the_first_model_forward(sampled_events):
    (shape_map,) = [e for e in sampled_events if e["type"] == "shape-map"]
    assert shape_map["model"] == "Net"
    rows = {r["path"]: r for r in shape_map["rows"]}
    assert rows[""]["params"] == 8 * 16 + 16 + 16 + 1
    assert rows["fc1"]["input_shapes"] == [[32, 8]] and rows["fc1"]["output_shapes"] == [[32, 16]]
    assert rows["fc2"]["line"] == marked_lines(program("shapes_program.py"), "@line")["hidden"] + 1


def test_observe_shapes_false_publishes_no_shapes_but_still_explains():
    events = run_events(program("shapes_program.py"), {"observeShapes": False, "checkLeakage": False, "measure": False})
    assert not [e for e in events if e["type"] in ("shape", "shape-map")]
    assert not [e for e in events if e["type"] == "finding" and e["finding"]["kind"] in ("shape", "device")]


# ---- explanations of real torch errors (in-process) ----------------------------------------------------------------


class TwoLayers(nn.Module):
    def __init__(self, hidden_in: int) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.head = nn.Linear(hidden_in, 2)

    def forward(self, x):
        x = self.encoder(x)
        return self.head(x)  # the line a Linear mismatch is reported at


def raised(fn):
    try:
        fn()
    except Exception as exc:
        return exc
    raise AssertionError("expected an error")


def test_matmul_error_names_module_path_operands_and_user_line():
    net = TwoLayers(hidden_in=12)
    exc = raised(lambda: net(torch.randn(4, 8)))
    (finding,) = shape_errors.explain(exc)
    assert finding.kind == "shape" and finding.severity == "error"
    assert finding.file == HERE
    assert "return self.head(x)" in open(HERE).read().splitlines()[finding.line - 1]
    assert finding.details["module"] == "net.head"
    assert finding.details["operands"] == {"input": "f32[4, 16]", "weight": "f32[2, 12]"}
    assert "expects 12 input features but receives 16: use nn.Linear(16, 2)" in finding.message
    assert finding.details["shapes"] == {"mat1": [4, 16], "mat2": [12, 2]}


def test_conv_channel_error_and_plain_line_broadcast_error():
    conv = nn.Conv2d(3, 4, 3)
    exc = raised(lambda: conv(torch.randn(2, 1, 8, 8)))
    (finding,) = shape_errors.explain(exc)
    assert finding.details["shape_error"] == "conv-channels"
    assert "expects 3 input channels but receives 1" in finding.message
    prediction = torch.randn(4, 3)
    target = torch.randn(4, 5)
    exc = raised(lambda: prediction - target)
    (finding,) = shape_errors.explain(exc)
    assert finding.details["operands"] == {"prediction": "f32[4, 3]", "target": "f32[4, 5]"}
    assert "module" not in finding.details


def test_device_error_becomes_a_device_finding():
    layer = nn.Linear(4, 2, device="meta")
    exc = raised(lambda: layer(torch.randn(3, 4)))
    (finding,) = shape_errors.explain(exc)
    assert finding.kind == "device" and set(finding.details["devices"]) == {"cpu", "meta"}


def test_unrelated_errors_are_not_explained():
    assert shape_errors.explain(raised(lambda: {}["missing"])) is None
    assert shape_errors.explain(raised(lambda: torch.randn(2).item())) is None


# ---- a real debug session ------------------------------------------------------------------------------------------


def test_debug_session_publishes_shapes_and_broadcast_finding():
    path = program("observed_shapes.py")
    lines = marked_lines(path)
    with DebugSession.launch(path, breakpoints=[(path, lines["end"], None)], options={}) as session:
        stop = session.wait_for_stop()
        shown = session.evaluate("SUMMARY", session.top_frame_id(stop))["result"]  # the repr of a JSON string
        events = json.loads(ast.literal_eval(shown))
        session.continue_(stop["threadId"])
        session.wait_for_exit()
    shapes = {e["line"]: e for e in events if e["type"] == "shape"}
    assert shapes[lines["pred"]]["text"] == "f32[32, 1]" and shapes[lines["pred"]]["name"] == "pred"
    findings = [e["finding"] for e in events if e["type"] == "finding"]
    assert [(f["kind"], f["line"]) for f in findings] == [("shape", lines["loss"])]


def test_debug_session_explains_an_uncaught_shape_error(tmp_path):
    path = program("uncaught_shape_error.py")
    line = marked_lines(path)["fails"]
    record = tmp_path / "findings.jsonl"
    with DebugSession.launch(path, options={}, env={"FINDINGS_FILE": str(record)}) as session:
        session.wait_for_exit()
    findings = [json.loads(text) for text in record.read_text().splitlines()]
    (finding,) = [f for f in findings if f["kind"] == "shape"]
    assert finding["line"] == line and finding["file"] == path
    assert finding["details"]["module"] == "model.2"
    assert finding["details"]["operands"] == {"input": "f32[4, 8]", "weight": "f32[2, 16]"}


# ---- the hint is the value the line assigned (issue: wrong shapes on the shipped examples) --------------------------


def example_hints(name: str) -> dict[int, set[tuple[str | None, str]]]:
    """(name, text) of each shape event per line of ``examples/<name>`` run under the agent."""
    options = {"observeShapes": True, "checkLeakage": False, "measure": False}
    out: dict[int, set[tuple[str | None, str]]] = {}
    for event in run_events(example(name), options):
        if event["type"] == "shape":
            out.setdefault(event["line"], set()).add((event.get("name"), event["text"]))
    return out


def line_of(name: str, text: str) -> int:
    lines = open(example(name)).read().split("\n")
    (number,) = [n for n, line in enumerate(lines, 1) if line.strip() == text]
    return number


def test_a_call_of_a_user_function_is_labelled_with_its_result_not_its_argument():
    hints = example_hints("nan_log_zero.py")
    # `labels[batch]` (f32[64]) is the last torch op on the line; the loss bce() returns is the value assigned
    assert hints[line_of("nan_log_zero.py", "loss = bce(p, labels[batch])")] == {("loss", "f32[]")}
    assert hints[line_of("nan_log_zero.py", "p = torch.sigmoid(model(features[batch]).squeeze(1))")] == {
        ("p", "f32[64]")
    }
    # a `return` line assigns nothing: no hint from whichever op ran last there
    assert (
        line_of("nan_log_zero.py", "return -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()  # @nan")
        not in hints
    )


def test_loop_targets_and_python_numbers_get_the_values_they_hold():
    hints = example_hints("correct_training.py")
    # the batch the loader yielded, not the sampler's or collate's intermediate tensors
    assert hints[line_of("correct_training.py", "for xb, yb in train_loader:")] == {("xb, yb", "f32[64, 20], i64[64]")}
    assert hints[line_of("correct_training.py", "loss = criterion(model(xb), yb)")] == {("loss", "f32[]")}
    # `correct += (...).sum().item()` holds a Python int: no tensor hint; random_split returns Subsets: none either
    assert line_of("correct_training.py", "correct += (model(xb).argmax(dim=1) == yb).sum().item()") not in hints
    split = "train_set, val_set = random_split(dataset, [1792, 256], generator=torch.Generator().manual_seed(0))"
    assert line_of("correct_training.py", split) not in hints
