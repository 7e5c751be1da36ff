"""The NaN sentinel on a CUDA model, through the doctor (`python -m tensorsight doctor --json`): a classifier
trained on the GPU with a hand-written loss gets its first -Inf reported at the user's line, with the op and the
phase, exactly as the same program on the CPU does. The CPU run always runs; the CUDA run where a GPU is present."""

import json
import os
import subprocess

import pytest
import torch

from support.paths import PYHELPERS, PYTHON, REPO, marked_lines, program

PROGRAM = program("sentinel_device.py")


def first_birth(device: str) -> dict:
    environment = {**os.environ, "PYTHONPATH": PYHELPERS, "OMP_NUM_THREADS": "1"}
    completed = subprocess.run(
        [PYTHON, "-m", "tensorsight", "doctor", "--json", PROGRAM, "--device", device],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert completed.returncode == 1, completed.stderr[-3000:]  # an error finding
    findings = [f for f in json.loads(completed.stdout)["findings"] if f["kind"] == "nonfinite"]
    assert len(findings) == 1, findings  # the first birth only
    return findings[0]


@pytest.mark.parametrize(
    "device",
    [
        "cpu",
        pytest.param(
            "cuda",
            marks=[pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")],
        ),
    ],
)
def test_the_first_inf_of_a_model_is_reported_at_the_users_line(device):
    finding = first_birth(device)
    assert finding["severity"] == "error"
    assert (finding["file"], finding["line"]) == (PROGRAM, marked_lines(PROGRAM, "@nan")[""])
    details = finding["details"]
    assert (details["op"], details["phase"]) == ("torch.log", "forward")
    assert details["neginf"] > 0 and details["nan"] == 0  # log(1 - p) with p == 1: -Inf, before any NaN
    assert 1 <= finding["step"] <= 8  # lr=10 saturates the sigmoid within the first epoch (step 3 on the CPU)
