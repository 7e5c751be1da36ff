"""The doctor on each example of examples/: the right kind, line and counts for shapes, data and devices, and
silence for those kinds where the example has no such bug (the other kinds belong to other features' tests)."""

import json
import os
import subprocess

import pytest

from support.doctor_report import observed
from support.paths import PYHELPERS, PYTHON, REPO, example

MY_KINDS = {"shape", "leakage", "device"}


def doctor(name: str) -> tuple[int, dict]:
    proc = subprocess.run(
        [PYTHON, "-m", "tensorsight", "doctor", "--json", example(name)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": PYHELPERS},
        cwd=REPO,
        timeout=240,
    )
    return proc.returncode, json.loads(proc.stdout)


def bug_lines(name: str) -> list[int]:
    """Lines marked ``# BUG`` in an example, in order."""
    with open(example(name), encoding="utf-8") as handle:
        return [number for number, text in enumerate(handle, start=1) if "# BUG" in text]


def runtime(document: dict, kind: str) -> list[dict]:
    """Findings of ``kind`` made while the script ran (static rules carry a rule code)."""
    return [f for f in document["findings"] if f["kind"] == kind and observed(f)]


def test_bug_shapes_silent_broadcasting_at_both_lines():
    _, doc = doctor("bug_shapes.py")
    loss_line, eval_line = bug_lines("bug_shapes.py")
    found = sorted(runtime(doc, "shape"), key=lambda f: f["line"])
    assert [(f["line"], f["severity"]) for f in found] == [(loss_line, "warning"), (eval_line, "warning")]
    assert found[0]["details"]["shapes"] == [[64, 1], [64]] and found[0]["details"]["result"] == [64, 64]
    assert found[1]["details"]["shapes"] == [[512, 1], [512]]
    assert found[0]["file"] == example("bug_shapes.py")
    assert not runtime(doc, "leakage") and not runtime(doc, "device")


def test_bug_shape_error_explained_at_the_forward_line():
    code, doc = doctor("bug_shape_error.py")
    (line,) = bug_lines("bug_shape_error.py")
    (finding,) = runtime(doc, "shape")
    assert code == 1 and finding["severity"] == "error" and finding["line"] == line
    assert finding["details"]["module"] == "model.classifier"
    assert finding["details"]["operands"] == {"input": "f32[64, 784]", "weight": "f32[10, 1024]"}
    assert "use nn.Linear(784, 10)" in finding["message"]
    assert "mat1 and mat2 shapes cannot be multiplied (64x784 and 1024x10)" in doc["error"]


def test_bug_leakage_overlap_duplicates_and_label_copy():
    _, doc = doctor("bug_leakage.py")
    train_line, test_line = bug_lines("bug_leakage.py")
    found = {f["details"]["check"]: f for f in runtime(doc, "leakage")}
    assert set(found) == {"label-copy", "id-overlap", "duplicates"}
    assert found["label-copy"]["line"] == train_line and found["label-copy"]["details"]["column"] == "column 5"
    for check in ("id-overlap", "duplicates"):
        assert found[check]["line"] == test_line and found[check]["severity"] == "error"
        assert (found[check]["details"]["count"], found[check]["details"]["total"]) == (100, 300)
    assert found["id-overlap"]["details"]["examples"][:2] == [700, 701]
    assert not runtime(doc, "shape") and not runtime(doc, "device")


def test_bug_device_same_data_moved_every_step():
    _, doc = doctor("bug_device.py")
    (line,) = bug_lines("bug_device.py")
    (finding,) = runtime(doc, "device")
    assert finding["line"] == line and finding["severity"] == "warning"
    details = finding["details"]
    assert details["tensors"] == 2 and details["steps"] >= 2 and details["nbytes"] == 4096 * 32 * 4 + 4096 * 8
    if details["dst"] == "cpu":  # CPU-only machine: truthful about the move being a no-op here
        assert details["copies"] is False and "no-op" in finding["message"]
    assert not runtime(doc, "shape") and not runtime(doc, "leakage")


@pytest.mark.parametrize("name", ["bug_training_logic.py", "bug_performance.py", "correct_training.py"])
def test_no_shape_data_or_device_finding_where_there_is_no_such_bug(name):
    _, doc = doctor(name)
    assert [f for f in doc["findings"] if f["kind"] in MY_KINDS] == []
    assert "error" not in doc


def test_correct_training_is_silent():
    code, doc = doctor("correct_training.py")
    assert code == 0 and doc["findings"] == []
