"""The doctor on training loops written the ways users write them (tests/programs/steps/): hand-written parameter
updates, a closure optimizer, two optimizers (a GAN), deliberate gradient accumulation, and the curve verdicts on
them — a learning rate too high without NaN, healthy summed-loss gradients, a NaN that came with the data.

Each program runs as a real subprocess (``python -m tensorsight doctor --json``), with the training log written so
the steps the doctor counted can be checked too."""

from __future__ import annotations

import json
import os
import re
import subprocess

from support.doctor_report import observed
from support.paths import PYHELPERS, PYTHON, REPO, example, program


def doctor(tmp_path, name: str, *args: str) -> tuple[dict, str]:
    """The doctor's JSON document and the training log it wrote for ``tests/programs/steps/<name>``."""
    return doctor_on(tmp_path, program(f"steps/{name}"), *args)


def doctor_on(tmp_path, path: str, *args: str) -> tuple[dict, str]:
    log = tmp_path / "training.log"
    proc = subprocess.run(
        [PYTHON, "-m", "tensorsight", "doctor", "--json", "--set", f"logFile={log}", path, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": PYHELPERS},
        cwd=REPO,
        timeout=240,
    )
    document = json.loads(proc.stdout)
    assert document.get("error") is None, proc.stderr
    return document, log.read_text(encoding="utf-8") if log.exists() else ""


def runtime(document: dict, kind: str) -> list[dict]:
    """Findings of ``kind`` made while the script ran (static rules carry a rule code)."""
    return [f for f in document["findings"] if f["kind"] == kind and observed(f)]


def warnings_and_errors(document: dict) -> list[dict]:
    return [f for f in document["findings"] if f["severity"] in ("warning", "error")]


def logged_steps(log: str) -> list[int]:
    return [int(m.group(1)) for m in re.finditer(r" step (\d+) loss ", log)]


def line_of(name: str, text: str) -> int:
    with open(program(f"steps/{name}"), encoding="utf-8") as handle:
        (number,) = [n for n, line in enumerate(handle, start=1) if text in line]
    return number


def test_hand_written_sgd_is_counted_step_by_step_and_a_clean_run_has_no_finding(tmp_path):
    document, log = doctor(tmp_path, "sgd_by_hand.py")
    assert warnings_and_errors(document) == []
    assert logged_steps(log) == list(range(1, 121))  # 6 epochs x 20 hand-written updates
    assert "grad_norm" in log.splitlines()[-1]


def test_hand_written_sgd_with_a_learning_rate_too_high_is_a_dynamics_finding_at_the_update_line(tmp_path):
    document, _ = doctor(tmp_path, "sgd_by_hand.py", "--lr", "4")
    (finding,) = runtime(document, "dynamics")
    assert finding["line"] == line_of("sgd_by_hand.py", "param.data.add_(-lr * param.grad)")
    details = finding["details"]
    assert details["diagnosis"] == "diverging" and details["lr"] is None and details["confidence"] >= 0.5
    assert details["loss_scale"] > 3 * details["loss_first"]
    assert "hand-written parameter update" in finding["message"] and "NaN" not in finding["message"]


def test_a_closure_optimizer_takes_one_step_per_call_and_a_clean_fit_has_no_finding(tmp_path):
    document, log = doctor(tmp_path, "lbfgs_fit.py")
    assert warnings_and_errors(document) == []
    assert logged_steps(log) == list(range(1, 26))  # 25 step(closure) calls, 5 evaluations each


def test_a_dcgan_gets_one_series_per_optimizer_and_no_dynamics_or_spike_warning(tmp_path):
    document, log = doctor(tmp_path, "dcgan.py")
    assert warnings_and_errors(document) == []
    assert "WARNING" not in log
    assert logged_steps(log).count(1) == 2  # D's and G's first steps, each in its own series


def test_a_generator_whose_gradients_are_never_cleared_is_found_at_its_step_line(tmp_path):
    document, _ = doctor(tmp_path, "dcgan_generator_grads_never_cleared.py")
    (finding,) = runtime(document, "training-logic")
    assert finding["line"] == line_of("dcgan_generator_grads_never_cleared.py", "# BUG: training-logic")
    assert finding["details"]["optimizer"] == "optimizerG" and "optimizerD" in finding["message"]
    assert runtime(document, "dynamics") == []


def test_deliberate_gradient_accumulation_is_clean(tmp_path):
    document, log = doctor(tmp_path, "accumulation.py")
    assert warnings_and_errors(document) == []
    assert logged_steps(log) == list(range(1, 41))  # 640 samples / 16 per batch / 4 batches per step x 4 epochs


def test_an_lstm_language_model_with_a_learning_rate_too_high_is_found_at_the_optimizer_line(tmp_path):
    # lr=2000 with clipping at 0.25: every step moves the weights by 500, so the logits grow step after step and the
    # loss climbs on any CPU (at lr=200 whether it climbs or slowly learns depends on the machine's float kernels)
    document, _ = doctor(tmp_path, "lstm_lm.py", "--lr", "2000")
    assert not any(f["kind"] == "nonfinite" for f in document["findings"])  # no NaN: the loss only climbs
    (finding,) = runtime(document, "dynamics")
    assert finding["line"] == line_of("lstm_lm.py", "optimizer = torch.optim.SGD(")
    details = finding["details"]
    assert details["lr"] == 2000 and details["diagnosis"] in {"diverging", "above-chance"}
    assert "lr=2e+03" in finding["message"] and "too high" in finding["message"]


def test_an_lstm_language_model_with_its_usual_learning_rate_is_clean(tmp_path):
    document, _ = doctor(tmp_path, "lstm_lm.py")
    assert runtime(document, "dynamics") == []


def test_a_vae_with_a_summed_loss_has_large_healthy_gradients_and_no_finding(tmp_path):
    document, log = doctor(tmp_path, "vae_summed_loss.py")
    assert warnings_and_errors(document) == []
    norms = [float(m.group(1)) for m in re.finditer(r"grad_norm (\S+)", log)]
    assert max(norms) > 1e3  # above the old absolute "exploding" threshold, healthy at this loss scale


def test_a_nan_that_came_with_the_data_gets_advice_about_the_data_not_the_learning_rate(tmp_path):
    document, _ = doctor(tmp_path, "data_nan.py")
    assert runtime(document, "nonfinite")
    (finding,) = runtime(document, "dynamics")
    assert finding["details"]["cause"] == "data" and "came in with the data" in finding["message"]
    assert "learning rate is probably too high" not in finding["message"]
    assert "clip" not in finding["message"]


def test_a_nan_born_in_log_of_zero_names_the_op_in_the_advice(tmp_path):
    document, _ = doctor_on(tmp_path, example("nan_log_zero.py"))
    (finding,) = [f for f in runtime(document, "dynamics") if f["details"].get("cause")]
    assert finding["details"]["cause"] == "domain" and "`torch.log`" in finding["message"]
    assert "learning rate is probably too high" not in finding["message"]
    assert not [f for f in runtime(document, "dynamics") if f["details"]["diagnosis"] == "exploding-gradients"]


NO_GRADIENT = """
import torch
from torch import nn

torch.manual_seed(0)
backbone, head = nn.Linear(4, 8), nn.Linear(8, 1)
for p in backbone.parameters():
    p.requires_grad_(False)  # frozen: its optimizer has nothing to learn, by design
frozen_opt = torch.optim.SGD(backbone.parameters(), lr=0.1)
head_opt = torch.optim.SGD(head.parameters(), lr=0.1)
x, y = torch.randn(32, 4), torch.randn(32, 1)
for step in range(30):
    frozen_opt.zero_grad()
    head_opt.zero_grad()
    features = backbone(x)
    loss = nn.functional.mse_loss(head(features{cut}), y)
    loss.backward()
    frozen_opt.step()
    head_opt.step()
"""


def test_an_optimizer_whose_parameters_get_no_gradient_is_found_where_the_graph_is_cut(tmp_path):
    script = tmp_path / "cut.py"
    source = NO_GRADIENT.replace("p.requires_grad_(False)", "pass").replace("{cut}", ".detach()")
    script.write_text(source, encoding="utf-8")
    document, _ = doctor_on(tmp_path, str(script))
    (finding,) = [f for f in runtime(document, "training-logic") if f["details"].get("check") == "no-gradient"]
    cut_line = next(n for n, text in enumerate(source.splitlines(), start=1) if ".detach()" in text)
    assert (finding["file"], finding["line"]) == (str(script), cut_line)
    assert (
        finding["details"]["optimizer"] == "frozen_opt"
        and "frozen_opt.step() has nothing to apply" in (finding["message"])
    )


def test_a_frozen_model_under_its_own_optimizer_is_no_finding(tmp_path):
    script = tmp_path / "frozen.py"
    script.write_text(NO_GRADIENT.replace("{cut}", ""), encoding="utf-8")
    document, _ = doctor_on(tmp_path, str(script))
    assert runtime(document, "training-logic") == []
