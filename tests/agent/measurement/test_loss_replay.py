"""agent/measurement/loss_replay.py in this process: the steps from a model call to ``loss.backward()`` are recorded
whatever shape the loss has (a user function with an in-place write, an L2 penalty on the parameters, a model that
returns its loss in a dict), replayed on copies that learn, and the user's model, gradients, batch and RNG are left
exactly as they were. The command around it runs as a subprocess in tests/cli/test_overfit.py."""

from __future__ import annotations

import pytest

from tensorsight.agent.measurement.loss_replay import CannotReplay, LossRecorder, compile_program, train_replay

torch = pytest.importorskip("torch")
nn = torch.nn


def one_hot_loss(logits, target):
    onehot = torch.zeros_like(logits)
    onehot.scatter_(1, target.unsqueeze(1), 1.0)  # in place into a tensor the loss reads
    return -(onehot * logits.log_softmax(dim=1)).sum(dim=1).mean()


class SelfScoring(nn.Module):
    """A model that computes its own loss and returns it in a dict, the way transformers models do."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 3))

    def forward(self, x, labels):
        logits = self.body(x)
        return {"logits": logits, "loss": nn.functional.cross_entropy(logits, labels)}


def record(step):
    """Run ``step()`` (one model call, a loss, backward) under a recorder; what it recorded."""
    recorder = LossRecorder(torch)
    recorder.install()
    try:
        step()
    finally:
        recorder.uninstall()
    return recorder.recording


def test_a_user_loss_with_an_in_place_write_and_a_penalty_is_replayed_on_a_copy_and_learns():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 4))
    x, y = torch.randn(32, 6), torch.randint(0, 4, (32,))

    def step():
        logits = model(x)
        loss = one_hot_loss(logits, y) + 1e-4 * sum(p.pow(2).sum() for p in model.parameters())
        loss.backward()

    recording = record(step)
    assert recording.reached is not None and {id(p) for p in model.parameters()} <= recording.reached
    program = compile_program(recording, torch)
    assert program.model is model and program.loss_name == "an expression in step()" and program.batch_size == 32
    params = [p.detach().clone() for p in model.parameters()]
    grads = [p.grad.clone() for p in model.parameters()]
    batch = (x.clone(), y.clone())
    rng = torch.get_rng_state()
    result = train_replay(program, torch, recording.reached, steps=150, lr=1e-2, samples=8)
    assert result.passed and result.samples == 8, result.message
    assert result.initial_loss > 1.0  # the one-hot written in place is replayed too (log 4 at the start)
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), params, strict=True))
    assert all(torch.equal(p.grad, g) for p, g in zip(model.parameters(), grads, strict=True))
    assert torch.equal(x, batch[0]) and torch.equal(y, batch[1]) and torch.equal(torch.get_rng_state(), rng)


def test_a_model_that_returns_its_own_loss_is_replayed():
    torch.manual_seed(0)
    model = SelfScoring()
    x, y = torch.randn(16, 6), torch.randint(0, 3, (16,))

    def step():
        model(x, labels=y)["loss"].backward()

    recording = record(step)
    program = compile_program(recording, torch)
    assert program.loss_name == "SelfScoring (its own output)"
    assert train_replay(program, torch, recording.reached, steps=150, lr=1e-2).passed


def test_a_loss_made_outside_the_recorded_steps_is_refused_with_the_lines_to_change():
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    x = torch.randn(8, 4)

    def step():
        model(x)  # no backward: gradients set some other way

    recording = record(step)
    with pytest.raises(CannotReplay, match=r"no loss\.backward\(\) after the model call at test_loss_replay\.py:\d+"):
        compile_program(recording, torch)
