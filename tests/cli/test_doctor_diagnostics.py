"""The doctor on the scripts of tests/programs/diagnostics/ (written the way users write training code: argparse,
``main()``, ``train()``/``test()`` per epoch): each ``# BUG: <kind>`` line gets a finding of that kind at that line,
and the clean scripts get no shape, leakage, device or memory finding (the kinds these checks own)."""

from __future__ import annotations

import json
import os
import re
import subprocess

from support.doctor_report import observed
from support.paths import PYHELPERS, PYTHON, REPO, program

MY_KINDS = {"shape", "leakage", "device", "memory"}


def doctor(name: str, *args: str) -> tuple[dict, str]:
    path = program(os.path.join("diagnostics", name))
    proc = subprocess.run(
        [PYTHON, "-m", "tensorsight", "doctor", "--json", path, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": PYHELPERS},
        cwd=REPO,
        timeout=240,
    )
    return json.loads(proc.stdout), proc.stderr


def bugs(name: str) -> list[tuple[int, str]]:
    """(line, kind) of each ``# BUG: kind`` mark of a diagnostics program."""
    with open(program(os.path.join("diagnostics", name)), encoding="utf-8") as handle:
        return [
            (number, match.group(1))
            for number, text in enumerate(handle, start=1)
            if (match := re.search(r"# BUG: ([\w-]+)", text))
        ]


def runtime(document: dict, kinds: set[str] = MY_KINDS) -> list[dict]:
    """Findings of those kinds made while the script ran (static rules carry a rule code)."""
    return [f for f in document["findings"] if f["kind"] in kinds and observed(f)]


def test_loss_accumulated_in_a_per_epoch_function_is_memory_growth_at_the_accumulating_line():
    doc, _ = doctor("loss_accumulation_memory.py")
    ((line, kind),) = bugs("loss_accumulation_memory.py")
    (finding,) = runtime(doc)
    assert (finding["kind"], finding["line"]) == (kind, line)
    details = finding["details"]
    assert details["variable"] == "total_loss" and details["steps_retained"] >= 3
    assert details["graph_nodes"] > 3 * 4  # at least a few nodes per retained step, measured by walking the graph
    assert "keeps the autograd graph of every step alive" in finding["message"]


def test_nn_init_while_the_sentinel_is_armed_prints_no_internal_error():
    doc, stderr = doctor("orthogonal_init.py")
    assert "[tensorsight]" not in stderr and "failed" not in stderr and "internal error" not in stderr
    assert runtime(doc, {"nonfinite", *MY_KINDS}) == []
    assert "error" not in doc


def test_overlapping_slices_and_custom_dataset_ranges_are_leakage_where_the_test_split_is_made():
    for name, (rows, total, first) in {
        "split_overlap_slices.py": (100, 300, 700),
        "custom_dataset_overlap.py": (100, 200, 400),
    }.items():
        doc, stderr = doctor(name)
        ((line, kind),) = bugs(name)
        (finding,) = runtime(doc)
        assert (finding["kind"], finding["line"], finding["severity"]) == (kind, line, "error"), name
        details = finding["details"]
        assert (details["check"], details["count"], details["total"], details["examples"][0]) == (
            "id-overlap",
            rows,
            total,
            first,
        )
        assert "[tensorsight]" not in stderr


def test_clean_splits_give_no_finding():
    doc, _ = doctor("split_clean.py")
    assert runtime(doc) == [] and "error" not in doc


def test_a_transformer_lm_with_positional_encoding_gets_no_shape_or_leakage_warning():
    doc, stderr = doctor("transformer_lm_clean.py")
    assert runtime(doc) == [] and "error" not in doc
    assert "[tensorsight]" not in stderr


def test_regression_with_n1_predictions_against_n_targets_at_each_bug_line():
    doc, _ = doctor("regression_shape_bug.py")
    found = sorted(runtime(doc), key=lambda f: f["line"])
    assert [(f["line"], f["kind"]) for f in found] == bugs("regression_shape_bug.py")
    loss, error, accuracy = found
    assert loss["details"]["op"] == "mse_loss" and loss["details"]["shapes"] == [[64, 1], [64]]
    assert error["details"]["shapes"] == [[64, 1], [64]] and error["details"]["result"] == [64, 64]
    assert accuracy["details"]["shapes"] == [[64], [64, 1]] and "argmax of a [64, 2] tensor" in accuracy["message"]


def test_a_librarys_own_transfers_at_the_users_self_log_lines_are_not_device_findings():
    doc, _ = doctor("library_logging.py")
    assert runtime(doc) == [] and "error" not in doc


def test_the_shape_map_runs_in_execution_order_and_explains_the_pooling_between_convolutions():
    doc, _ = doctor("cnn_pooling.py")
    assert runtime(doc) == [] and "error" not in doc
    shape_map = doc["shapeMap"]
    assert shape_map["model"] == "Net"
    shown = [row["path"] if row.get("kind") != "op" else row["type"] for row in shape_map["rows"]]
    assert shown == [
        "",
        "conv1",
        "act",
        "F.max_pool2d",
        "conv2",
        "F.relu",
        "F.max_pool2d",
        "torch.flatten",
        "fc1",
        "F.relu",
        "fc2",
    ]
    rows = shape_map["rows"]
    assert rows[3]["input_shapes"] == [[16, 8, 28, 28]] and rows[3]["output_shapes"] == [[16, 8, 14, 14]]
    assert rows[4]["input_shapes"] == [[16, 8, 14, 14]]  # what conv2 receives is what the pooling made
    assert rows[2]["memory_bytes"] == 0  # ReLU(inplace=True): conv1's output, counted once
    assert rows[7]["memory_bytes"] == 0  # torch.flatten is a view
