"""A Hugging Face ``transformers.Trainer`` loop under the real doctor (tests/programs/frameworks/transformers_gpt2.py).

The Trainer hides the loop: the model computes its loss itself (a ``ModelOutput`` with ``loss`` and ``logits``),
``accelerator.backward(loss)`` backpropagates it, ``clip_grad_norm_`` clips every step to norm 1 and the evaluation
loop reads the loss out of the model's output under ``no_grad``. With ``learning_rate=5e3`` the cross-entropy over 100
tokens sits at 1e8–1e9 (a uniform guess scores ln 100 = 4.6) while the linear schedule pulls it down, and the
optimizer only ever sees clipped gradients: before, the doctor reported nothing. Checked here: that run gets a
``dynamics`` finding with what was measured; each step's loss and each validation loss are the Trainer's own (the
values it logs itself); a clean run gets no warning. The Trainer's callbacks are left as they are.
"""

from __future__ import annotations

import ast
import json
import math
import re
import subprocess

import pytest

from frameworks.runs import TIMEOUT, doctor_command, environment, events_command, events_of, line, loud, runtime
from support.paths import REPO

pytest.importorskip("transformers", reason="transformers is not installed (scripts/requirements-dev.txt pins it)")
pytest.importorskip("accelerate", reason="accelerate is not installed (transformers.Trainer needs it)")

PROGRAM = "transformers_gpt2.py"
STEPS_PER_EPOCH, EPOCHS = 6, 4  # 96 sequences / batch 16, 4 epochs


def doctor(*args: str) -> dict:
    proc = subprocess.run(
        doctor_command(PROGRAM, *args), capture_output=True, text=True, env=environment(), cwd=REPO, timeout=TIMEOUT
    )
    assert proc.stdout, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def diverging() -> dict:
    return doctor("--lr", "5e3")


@pytest.fixture(scope="module")
def clean() -> dict:
    return doctor("--lr", "2e-3")


@pytest.fixture(scope="module")
def diverging_events() -> tuple[list[dict], list[dict]]:
    """The run's events, and the dictionaries the Trainer printed itself (its own log of loss, grad_norm, eval_loss)."""
    proc = subprocess.run(
        events_command(PROGRAM, "--lr", "5e3"),
        capture_output=True,
        text=True,
        env=environment(),
        cwd=REPO,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = [ast.literal_eval(m) for m in re.findall(r"^\{'.*\}$", proc.stderr, flags=re.MULTILINE)]
    return events_of(proc.stdout), [{k: float(v) for k, v in d.items()} for d in printed]


def test_lr_5e3_the_loss_far_above_chance_is_a_dynamics_finding(diverging):
    (finding,) = runtime(diverging, "dynamics")
    details = finding["details"]
    assert finding["severity"] == "warning" and finding["line"] == line(PROGRAM, "train")
    assert details["diagnosis"] == "above-chance" and details["classes"] == 100
    assert math.isclose(details["chance_level"], math.log(100), rel_tol=1e-6)
    assert 1e7 < details["loss_median"] < 1e10 and details["ratio"] > 1e6
    assert details["lr"] == 5e3  # the peak of the schedule, not its decayed last value
    assert details["grad_norm_before_clipping"] > 1e3  # the optimizer itself only saw norm-1 gradients
    assert "ln 100 = 4.61" in finding["message"] and "before clipping to 1" in finding["message"]


def test_lr_5e3_gets_no_other_warning(diverging):
    assert [f["kind"] for f in loud(diverging)] == ["dynamics"]
    assert "error" not in diverging


def test_a_clean_run_gets_no_warning(clean):
    assert loud(clean) == []
    assert "error" not in clean


def test_each_step_and_each_evaluation_is_the_trainers_own(diverging_events):
    events, printed = diverging_events
    train = [e for e in events if e["type"] == "scalars" and e["split"] == "train"]
    val = [e for e in events if e["type"] == "scalars" and e["split"] == "val"]
    assert [e["step"] for e in train] == list(range(1, STEPS_PER_EPOCH * EPOCHS + 1))
    # the Trainer logs once per epoch: the mean training loss of the epoch, then its eval_loss
    trainer_losses = [d["loss"] for d in printed if "loss" in d]
    trainer_evals = [d["eval_loss"] for d in printed if "eval_loss" in d]
    ours = [e["values"]["loss"] for e in train]
    means = [sum(ours[i : i + STEPS_PER_EPOCH]) / STEPS_PER_EPOCH for i in range(0, len(ours), STEPS_PER_EPOCH)]
    assert len(trainer_losses) == EPOCHS
    assert all(math.isclose(a, b, rel_tol=2e-3) for a, b in zip(means, trainer_losses, strict=True))
    assert [e["step"] for e in val] == [STEPS_PER_EPOCH * epoch for epoch in range(1, EPOCHS + 1)]
    assert all(math.isclose(e["values"]["loss"], b, rel_tol=2e-3) for e, b in zip(val, trainer_evals, strict=True))
    # the optimizer is handed clipped gradients: their norm is the clip norm, the Trainer's grad_norm is before it
    assert all(e["values"]["grad_norm"] <= 1.0 + 1e-4 for e in train[1:])
    assert max(d["grad_norm"] for d in printed if "grad_norm" in d) > 1e3


def test_phases_and_evaluation_time_through_the_trainers_loop(diverging_events):
    events, _ = diverging_events
    phases = [e for e in events if e["type"] == "phases"]
    assert [e["step"] for e in phases] == list(range(1, STEPS_PER_EPOCH * EPOCHS + 1))
    assert all(e["seconds"][name] > 0 for e in phases for name in ("data", "forward", "backward", "optimizer"))
    assert all(e["line"] == line(PROGRAM, "train") for e in phases)  # the loop is trainer.train()
    # each epoch's evaluation runs after its last step: its time is kept apart, in the step that follows
    evaluated = [e["step"] for e in phases if e.get("eval_seconds")]
    assert evaluated == [STEPS_PER_EPOCH * epoch + 1 for epoch in range(1, EPOCHS)]
