"""The doctor on the scripts of tests/programs/diagnostics/ (written the way users write training code: argparse,
``main()``, ``train()``/``test()`` per epoch): each ``# BUG: <kind>`` line gets a finding of that kind at that line,
and the clean scripts get no shape, leakage, device or memory finding (the kinds these checks own)."""

from __future__ import annotations

import json
import os
import re
import subprocess

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
    return [f for f in document["findings"] if f["kind"] in kinds and "code" not in f.get("details", {})]


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
