"""Evaluation as users write it, through the real doctor: ``python -m tensorsight doctor --json`` on the programs of
``tests/programs/evaluation/`` (argparse, ``main()``, ``train()``/``test()`` per epoch, an ``evaluate(net)``
helper, a ``Trainer`` class in its own module).

Each bug line carries ``# BUG: <kind>``; the finding must be of that kind at that line, and the clean programs get
no train-mode-evaluation finding (nor any runtime training-logic finding). The programs run two at a time, one doctor
each.
"""

from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from support.doctor_report import observed
from support.paths import PYHELPERS, PYTHON, REPO

PROGRAMS = os.path.join(REPO, "tests", "programs", "evaluation")
THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# Two at a time, one per core: seven doctors on two cores stretch the data-loading phase of a healthy program past the
# performance rule's share (a real reading of an overloaded machine, not of the program).
DOCTORS_AT_ONCE = 2
RUNS = {
    "functional_overfit": (),
    "functional_healthy": ("--set=logFile={log}",),
    "eval_helper_dropout": (),
    "eval_loop_calls_train": (),
    "train_with_trainer": (),
    "clean_evaluation": (),
    "clean_gan": (),
}


def program(name: str) -> str:
    return os.path.join(PROGRAMS, f"{name}.py")


def bug_lines(path: str, kind: str) -> list[int]:
    with open(path, encoding="utf-8") as handle:
        return [number for number, text in enumerate(handle, start=1) if f"# BUG: {kind}" in text]


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, dict]:
    """name -> the doctor's JSON document (and ``log``: the training log file, where one was asked for)."""
    folder = tmp_path_factory.mktemp("evaluation")
    env = {**os.environ, **THREADS, "PYTHONPATH": PYHELPERS}
    env.pop("TENSORSIGHT_OPTIONS", None)

    def run(name: str) -> dict:
        log = str(folder / f"{name}.log")
        command = [PYTHON, "-m", "tensorsight", "doctor", "--json", *(f.format(log=log) for f in RUNS[name])]
        done = subprocess.run(
            [*command, program(name)], cwd=REPO, env=env, capture_output=True, text=True, timeout=400, check=False
        )
        assert done.stdout.strip(), f"{name}: {done.stderr[-3000:]}"
        document = json.loads(done.stdout)
        document["log"] = open(log, encoding="utf-8").read() if os.path.exists(log) else ""
        assert "error" not in document, (name, document["error"])
        return document

    with ThreadPoolExecutor(max_workers=DOCTORS_AT_ONCE) as pool:
        documents = dict(zip(RUNS, pool.map(run, RUNS), strict=True))
    return documents


def runtime(document: dict, kind: str) -> list[dict]:
    """Findings made while the script ran (the static rules' carry a rule id)."""
    return [f for f in document["findings"] if f["kind"] == kind and observed(f)]


def train_mode_evaluations(document: dict) -> list[dict]:
    return [f for f in document["findings"] if f.get("details", {}).get("check") == "train-mode-evaluation"]


def test_overfitting_is_diagnosed_when_the_test_loss_is_a_functional_loss(reports):
    path = program("functional_overfit")
    (finding,) = [f for f in runtime(reports["functional_overfit"], "dynamics") if f["severity"] == "warning"]
    assert (finding["file"], [finding["line"]]) == (path, bug_lines(path, "dynamics"))
    details = finding["details"]
    assert details["diagnosis"] == "overfitting" and details["val_points"] == 20
    assert details["val_last"] > 1.1 * details["val_best"] and details["train_last"] < details["train_at_best"]
    assert not runtime(reports["functional_overfit"], "training-logic")


def test_a_healthy_run_with_a_functional_loss_imported_by_name_is_silent_and_its_validation_is_logged(reports):
    document = reports["functional_healthy"]
    assert document["findings"] == []
    validations = [line for line in document["log"].splitlines() if " val_loss " in line]
    assert len(validations) == 6  # one per epoch: cross_entropy imported by name is the relayed function
    losses = [float(line.rsplit(" ", 1)[1]) for line in validations]
    assert losses == sorted(losses, reverse=True)


def test_an_evaluate_helper_in_training_mode_is_found_at_its_forward_line(reports):
    path = program("eval_helper_dropout")
    (finding,) = runtime(reports["eval_helper_dropout"], "training-logic")
    assert (finding["file"], [finding["line"]]) == (path, bug_lines(path, "training-logic"))
    assert finding["severity"] == "warning"
    details = finding["details"]
    assert (details["check"], details["module"], details["evidence"]) == (
        "train-mode-evaluation",
        "Net",
        "never-backpropagated",
    )
    assert details["layers"] == ["dropout (Dropout)"]
    assert "model.eval() before evaluating and model.train() after" in finding["message"]


def test_a_test_loop_that_calls_train_with_batch_norm_under_no_grad_is_found(reports):
    path = program("eval_loop_calls_train")
    (finding,) = train_mode_evaluations(reports["eval_loop_calls_train"])
    assert (finding["file"], [finding["line"]]) == (path, bug_lines(path, "training-logic"))
    details = finding["details"]
    assert details["evidence"] == "no_grad" and details["behaviours"] == ["batch norm"]
    assert details["held_out"]["file"] == path and details["held_out"]["held_out"] == "named 'test'"


def test_a_trainer_validate_method_in_another_module_is_found_in_that_module(reports):
    path = program("trainer")
    (finding,) = train_mode_evaluations(reports["train_with_trainer"])
    assert (finding["file"], [finding["line"]]) == (path, bug_lines(path, "training-logic"))
    assert finding["details"]["evidence"] == "no_grad" and finding["details"]["layers"] == ["2 (Dropout)"]
    assert finding["details"]["held_out"]["held_out"] == "named 'valid'"


@pytest.mark.parametrize("name", ["clean_evaluation", "clean_gan"])
def test_clean_evaluation_gets_no_training_logic_finding(reports, name):
    assert runtime(reports[name], "training-logic") == [] and train_mode_evaluations(reports[name]) == []
    assert not bug_lines(program(name), "")


def test_clean_evaluation_is_silent_altogether(reports):
    assert reports["clean_evaluation"]["findings"] == []
