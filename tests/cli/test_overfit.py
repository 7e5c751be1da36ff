"""``python -m tensorsight overfit`` on scripts whose loss is the user's own: a loss function in another module
called from a trainer class, a masked loss that reshapes with the batch's sizes, a hand-written cross-entropy (in a
module, or inline in the loop). The command records the steps from the model call to ``loss.backward()`` and trains
copies on them (agent/measurement/loss_replay.py); its terminal summary is labelled and translated, never the JSON
document's keys; a script it truly cannot replay gets a sentence naming the lines and the code it needs."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from support.paths import PYHELPERS, PYTHON, REPO, program

THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
RAW_KEYS = ("model_file", "model_line", "loss_file", "loss_line", "initial_loss", "final_loss", "best_loss", "'lr'")


def overfit(*args: str, locale: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **THREADS, "PYTHONPATH": PYHELPERS}
    env.pop("TENSORSIGHT_LOCALE", None)
    if locale:
        env["TENSORSIGHT_LOCALE"] = locale
    return subprocess.run(
        [PYTHON, "-m", "tensorsight", "overfit", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=240
    )


def line_of(path: str, text: str) -> int:
    with open(path, encoding="utf-8") as handle:
        return next(number for number, line in enumerate(handle, start=1) if text in line)


CUSTOM_LOSSES = [
    # (program, script args, the loss's name, where it is computed)
    ("overfit_custom/classifier.py", (), "an expression in compute_loss()", ("objectives.py", "return label_smoothed")),
    ("overfit_custom/tagger.py", (), "masked_token_loss()", ("objectives.py", "return -(picked * weights)")),
    ("hand_loss/train.py", (), "soft_cross_entropy()", ("losses.py", "return -(onehot * torch.log(probs))")),
    ("hand_loss/train.py", ("--inline",), "an expression in main()", ("train.py", "@nan inline")),
]


@pytest.mark.parametrize(("name", "script_args", "loss", "loss_at"), CUSTOM_LOSSES)
def test_a_loss_computed_by_the_users_own_code_is_overfit(name, script_args, loss, loss_at):
    path = program(name)
    proc = overfit("--json", path, *script_args)
    document = json.loads(proc.stdout)
    assert proc.returncode == 0, document
    assert "error" not in document and document["passed"] is True
    assert document["final_loss"] < 0.05 * document["initial_loss"]
    assert document["loss"] == loss
    loss_file = os.path.join(os.path.dirname(path), loss_at[0])
    assert (document["loss_file"], document["loss_line"]) == (loss_file, line_of(loss_file, loss_at[1]))


def test_the_trainer_programs_model_is_the_module_its_loss_function_calls():
    path = program("overfit_custom/classifier.py")
    document = json.loads(overfit("--json", path).stdout)
    objectives = os.path.join(os.path.dirname(path), "objectives.py")
    assert document["model"] == "MLP" and document["samples"] == 8
    assert (document["model_file"], document["model_line"]) == (objectives, line_of(objectives, "logits = model("))


def test_a_loss_that_reshapes_with_the_batch_size_trains_on_the_whole_first_batch():
    document = json.loads(overfit("--json", program("overfit_custom/tagger.py")).stdout)
    assert document["samples"] == 16 and document["passed"] is True  # view(batch * length) does not fit 8 samples


@pytest.mark.parametrize("locale", [None, "es"])
def test_the_terminal_summary_is_labelled_and_translated_never_raw_keys(locale):
    proc = overfit(program("hand_loss/train.py"), locale=locale)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    text = proc.stdout
    assert not [key for key in RAW_KEYS if key in text]
    labels = ("Model:", "Loss:", "Verdict:") if locale is None else ("Modelo:", "Pérdida:", "Veredicto:")
    assert all(label in text for label in labels), text
    train, losses = program("hand_loss/train.py"), program("hand_loss/losses.py")
    model_call, loss_line = line_of(train, "logits = model(inputs)"), line_of(losses, "# @nan")
    assert f"train.py:{model_call}" in text and f"losses.py:{loss_line}" in text
    assert ("OK" in text) and ("error" not in text.lower())


def test_a_step_without_backward_gets_a_precise_message_not_a_script_error():
    path = program("overfit_custom/grad_by_hand.py")
    proc = overfit("--json", path)
    document = json.loads(proc.stdout)
    assert proc.returncode == 2 and document["script_failed"] is False
    message = document["error"]
    assert "stopped with an error" not in message
    model_line, step_line = line_of(path, "loss = (model(x)"), line_of(path, "optimizer.step()")
    assert f"after the model call at grad_by_hand.py:{model_line}" in message
    assert f"reached optimizer.step() at grad_by_hand.py:{step_line}" in message
    assert "loss.backward()" in message and "torch.autograd.grad" in message
    text = overfit(path).stdout
    assert "Could not run the check" in text and not [key for key in RAW_KEYS if key in text]


def test_a_script_that_really_fails_is_said_to_have_failed(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("import torch\nraise ValueError('bad config')\n", encoding="utf-8")
    document = json.loads(overfit("--json", str(script)).stdout)
    assert document["script_failed"] is True and "bad config" in document["error"]
