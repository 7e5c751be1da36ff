"""The doctor names the line of the first NaN/Inf on the programs where real NaN bugs live
(tests/programs/first_nan): the same line a Debug Training session stops on
(``tests/agent/sentinel/test_first_nan_families_dap.py``), and nothing on their fixed versions (``--fixed``)."""

import json
import os
import subprocess

import pytest

from support.paths import PYHELPERS, PYTHON, marked_lines, program

FAMILIES = {
    "module-level logistic regression": ("logistic_module_level.py", "logistic_module_level.py"),
    "while True with an isnan exit": ("softmax_while_isnan.py", "softmax_while_isnan.py"),
    "loss class in its own module": ("library_loss/train.py", "library_loss/losses.py"),
    "masked softmax over a padded row": ("masked_attention.py", "masked_attention.py"),
    "custom autograd.Function backward": ("custom_function.py", "custom_function.py"),
    "sqrt backward in the first step": ("backward_first_step.py", "backward_first_step.py"),
}


def _doctor(path, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORSIGHT_")}
    env["PYTHONPATH"] = PYHELPERS
    completed = subprocess.run(
        [PYTHON, "-m", "tensorsight", "doctor", "--json", path, *args],
        cwd=os.path.dirname(path),
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    return json.loads(completed.stdout)["findings"]


@pytest.mark.parametrize("family", list(FAMILIES), ids=list(FAMILIES))
def test_the_doctor_names_the_line_and_only_evidence_based_advice(family):
    script, marked = FAMILIES[family]
    marked_path = program(f"first_nan/{marked}")
    findings = _doctor(program(f"first_nan/{script}"))
    nonfinite = [f for f in findings if f["kind"] == "nonfinite"]
    assert len(nonfinite) == 1, findings
    assert (os.path.abspath(nonfinite[0]["file"]), nonfinite[0]["line"]) == (
        marked_path,
        marked_lines(marked_path, "@nan")[""],
    )
    assert not any("learning rate is probably too high" in f["message"] for f in findings), findings


@pytest.mark.parametrize("family", list(FAMILIES), ids=list(FAMILIES))
def test_the_fixed_program_gets_no_nonfinite_finding(family):
    findings = _doctor(program(f"first_nan/{FAMILIES[family][0]}"), "--fixed")
    assert not [f for f in findings if f["kind"] in ("nonfinite", "dynamics")], findings
