"""The measurement API people call in their own code: Timer/Cronometro, setup_logging, memory_top,
overfit_one_batch (which must leave the user's model, batch and RNG exactly as they were)."""

from __future__ import annotations

import logging
import time
import tracemalloc

import pytest

import tensorsight
from tensorsight.agent.runtime import events


@pytest.fixture
def published():
    seen: list[dict] = []
    unsubscribe = events.subscribe(seen.append)
    yield seen
    unsubscribe()


@pytest.mark.timing  # bounds a wall time: scripts/test.sh runs it with nothing beside it
def test_timer_measures_a_block_and_publishes_it(published, capsys):
    with tensorsight.Timer("data") as timer:
        time.sleep(0.02)
    assert 0.015 < timer.elapsed < 0.5
    assert timer.calls == 1 and timer.total == timer.elapsed
    assert capsys.readouterr().out.startswith("[Timer] data: ")
    event = next(e for e in published if e["type"] == "timer")
    assert event["name"] == "data" and event["seconds"] == timer.elapsed
    assert event["file"] == __file__ and isinstance(event["line"], int)


def test_timer_as_a_decorator_counts_every_call_and_the_spanish_alias_is_the_same_class(capsys):
    cronometro = tensorsight.Cronometro("paso", verbose=False)
    assert tensorsight.Cronometro is tensorsight.Timer

    @cronometro
    def step(seconds: float) -> str:
        time.sleep(seconds)
        return "done"

    assert step(0.005) == "done" and step(0.005) == "done"
    assert cronometro.calls == 2 and cronometro.total >= 0.009 and cronometro.mean == cronometro.total / 2
    assert capsys.readouterr().out == ""


def test_timer_records_time_even_when_the_block_raises():
    timer = tensorsight.Timer("boom", verbose=False)
    with pytest.raises(ValueError), timer:
        raise ValueError("user error")
    assert timer.calls == 1


def test_setup_logging_writes_timestamped_levels_to_a_file_once(tmp_path):
    path = tmp_path / "nested" / "train.log"
    logger = tensorsight.setup_logging(path, "DEBUG", name="tests.measure")
    again = tensorsight.setup_logging(path, name="tests.measure")
    assert again is logger and len(logger.handlers) == 1 and not logger.propagate
    logger.warning("loss spike at step %d", 7)
    for handler in logger.handlers:
        handler.close()
        logger.removeHandler(handler)
    (line,) = path.read_text(encoding="utf-8").splitlines()
    date, clock, level, *message = line.split()
    assert date.count("-") == 2 and clock.count(":") == 2
    assert level == "WARNING" and " ".join(message) == "loss spike at step 7"
    assert logging.getLogger("tests.measure").level == logging.INFO


def test_memory_top_names_the_line_that_holds_memory():
    was_tracing = tracemalloc.is_tracing()
    first = tensorsight.memory_top()  # starts tracing if needed
    assert was_tracing or "started now" in first.note
    blocks = [bytearray(50_000) for _ in range(40)]  # ~2 MB allocated on this line
    top = tensorsight.memory_top(5, user_only=True)
    if not was_tracing:
        tracemalloc.stop()  # tracing slows every allocation: leave the test process as it was
    assert blocks and top
    assert top[0].file == __file__ and "bytearray(50_000)" in top[0].source
    assert top[0].size_bytes >= 40 * 50_000
    assert "bytearray(50_000)" in str(top)


def test_overfit_one_batch_learns_on_a_copy_and_leaves_everything_unchanged():
    torch = pytest.importorskip("torch")
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 3))
    model.eval()
    inputs, targets = torch.randn(32, 6), torch.randint(0, 3, (32,))
    model(inputs).sum().backward()  # the user's model has gradients of its own
    before = {k: v.clone() for k, v in model.state_dict().items()}
    grads = [p.grad.clone() for p in model.parameters()]
    versions = [p._version for p in model.parameters()]
    batch_before, rng_before = (inputs.clone(), targets.clone()), torch.random.get_rng_state()

    result = tensorsight.overfit_one_batch(model, nn.CrossEntropyLoss(), (inputs, targets), steps=150, lr=1e-2)

    assert result.passed, result.message
    assert result.samples == 8 and result.steps == 150 and result.final_loss < 0.05 * result.initial_loss
    assert str(result).startswith("overfit one batch: OK")
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(torch.equal(g, p.grad) for g, p in zip(grads, model.parameters(), strict=True))
    assert [p._version for p in model.parameters()] == versions
    assert not model.training  # its mode too
    assert torch.equal(inputs, batch_before[0]) and torch.equal(targets, batch_before[1])
    assert torch.equal(torch.random.get_rng_state(), rng_before)


def test_overfit_one_batch_fails_when_the_model_cannot_fit_eight_samples():
    torch = pytest.importorskip("torch")
    torch.manual_seed(1)
    model = torch.nn.Linear(5, 1)
    model.weight.requires_grad_(False)  # a frozen layer by mistake: only the bias learns
    inputs, targets = torch.randn(16, 5), torch.randn(16, 1) * 3
    result = tensorsight.overfit_one_batch(model, torch.nn.functional.mse_loss, (inputs, targets), steps=100, lr=0.05)
    assert not result.passed
    assert "FAILED" in result.message and "frozen" in result.message
    assert result.final_loss > 0.05 * result.initial_loss


def test_overfit_one_batch_rejects_bad_input_clearly():
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match=r"\(inputs, targets\)"):
        tensorsight.overfit_one_batch(torch.nn.Linear(2, 1), torch.nn.MSELoss(), torch.ones(4, 2))
    with pytest.raises(TypeError, match=r"torch\.nn\.Module"):
        tensorsight.overfit_one_batch(lambda x: x, torch.nn.MSELoss(), (torch.ones(4, 2), torch.ones(4, 2)))
