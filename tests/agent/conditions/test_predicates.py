"""The breakpoint predicates in-process: right answers on every input kind, never an exception, no change to the
program's state, misuse reported once (stderr and a ``condition-error`` event)."""

import math

import numpy as np
import pytest
import torch
from torch import nn

import tensorsight
from tensorsight.agent.conditions import predicates as conditions
from tensorsight.agent.runtime import events
from tensorsight.core.conditions import PREDICATES

NAN = float("nan")
INF = float("inf")


@pytest.fixture
def reported():
    """Condition-error events published during the test."""
    seen = []
    unsubscribe = events.subscribe(lambda e: seen.append(e) if e["type"] == "condition-error" else None)
    yield seen
    unsubscribe()


def model_with_grads(poison=None):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model(torch.randn(3, 4)).sum().backward()
    if poison is not None:
        with torch.no_grad():
            model[2].weight.grad[0, 0] = poison
    return model


def test_every_documented_predicate_is_on_the_builtin():
    for predicate in PREDICATES:
        assert callable(getattr(tensorsight, predicate.name)), predicate.name
    assert callable(tensorsight.break_on_nonfinite) and callable(tensorsight.last_nonfinite)


@pytest.mark.parametrize(
    ("value", "nan", "inf"),
    [
        (torch.tensor([1.0, 2.0]), False, False),
        (torch.tensor([1.0, NAN]), True, False),
        (torch.tensor([1.0, -INF]), False, True),
        (torch.tensor([NAN, INF], dtype=torch.float16), True, True),
        (torch.tensor([1 + 1j, complex(0, NAN)]), True, False),
        (torch.arange(5), False, False),
        (torch.empty(0), False, False),
        (torch.full((3, 4), NAN)[:, ::2], True, False),  # non-contiguous
        (torch.tensor([0.0, NAN]).to_sparse(), True, False),
        (np.array([1.0, NAN]), True, False),
        (np.array([1.0, INF], dtype=np.float32), False, True),
        (np.arange(3), False, False),
        (NAN, True, False),
        (-INF, False, True),
        (3, False, False),
        ([torch.tensor(1.0), {"a": np.array([INF])}], False, True),
        ((torch.tensor(1.0), [NAN]), True, False),
        (None, False, False),
    ],
)
def test_nan_inf_nonfinite_on_every_kind(value, nan, inf):
    assert tensorsight.nan(value) is nan
    assert tensorsight.inf(value) is inf
    assert tensorsight.nonfinite(value) is (nan or inf)


def test_module_and_optimizer_cover_parameters_buffers_and_gradients():
    model = model_with_grads()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    assert not tensorsight.nonfinite(model) and not tensorsight.nonfinite(optimizer)
    poisoned = model_with_grads(poison=NAN)
    assert tensorsight.nan(poisoned) and tensorsight.nan(torch.optim.SGD(poisoned.parameters(), lr=0.1))
    # parameters given one by one are just tensors (their gradients come with the module or optimizer)
    assert not tensorsight.nan(poisoned.parameters()) and not tensorsight.nan(list(poisoned.parameters()))
    assert tensorsight.nan([p.grad for p in poisoned.parameters()])
    norm = nn.BatchNorm1d(3)
    norm.running_var[1] = INF
    assert tensorsight.inf(norm) and not tensorsight.nan(norm)


def test_meta_tensors_have_no_values_to_judge():
    assert tensorsight.nonfinite(torch.empty(3, device="meta")) is False


def test_grad_norm_matches_torch_and_maps_nan_to_inf():
    model = model_with_grads()
    expected = torch.linalg.vector_norm(torch.cat([p.grad.reshape(-1) for p in model.parameters()])).item()
    assert tensorsight.grad_norm(model) == pytest.approx(expected, rel=1e-5)
    assert tensorsight.grad_norm(model.parameters()) == pytest.approx(expected, rel=1e-5)
    assert tensorsight.grad_norm(torch.optim.Adam(model.parameters())) == pytest.approx(expected, rel=1e-5)
    assert tensorsight.grad_norm([p.grad for p in model.parameters()]) == pytest.approx(expected, rel=1e-5)
    assert tensorsight.grad_norm(model_with_grads(poison=NAN)) == math.inf  # so `> threshold` fires
    assert tensorsight.grad_norm(model_with_grads(poison=INF)) > 1e3


def test_spike_learns_a_level_then_fires_on_a_jump_per_call_site():
    def series(values, factor=3.0):
        return [tensorsight.spike(v, factor) for v in values]  # one call site for the whole list

    assert series([1.0] * 5 + [1.2, 2.0, 4.0, 1.0]) == [False] * 7 + [True, False]
    assert series([1.0] * 5 + [torch.tensor(NAN)]) == [False] * 5 + [True]
    assert series([torch.ones(10) * v for v in (1, 1, 1, 1, 1, 5)], factor=4) == [False] * 5 + [True]
    # two call sites in one expression keep separate levels
    flags = [tensorsight.spike(1.0) or tensorsight.spike(100.0 if i == 6 else 1.0) for i in range(7)]
    assert flags == [False] * 6 + [True]


def test_shape_is_with_wildcards_and_ellipsis():
    x = torch.zeros(8, 3, 32, 32)
    assert tensorsight.shape_is(x, (8, 3, 32, 32))
    assert tensorsight.shape_is(x, (None, 3, -1, 32))
    assert tensorsight.shape_is(x, (..., 32, 32)) and tensorsight.shape_is(x, (8, ...))
    assert tensorsight.shape_is(x, torch.Size([8, 3, 32, 32]))
    assert not tensorsight.shape_is(x, (None, 10))
    assert not tensorsight.shape_is(x, (8, 3, ..., 3, 32, 32))
    assert tensorsight.shape_is(np.zeros(5), 5)


def test_wrong_device():
    model = nn.Linear(2, 2)
    assert not tensorsight.wrong_device(model, torch.zeros(2))
    assert tensorsight.wrong_device(model, torch.zeros(2, device="meta"))
    assert tensorsight.wrong_device(torch.zeros(2), device="cuda")
    assert not tensorsight.wrong_device(torch.zeros(2), np.zeros(2), device="cpu")


def test_zero_exploding_changed_grad_missing():
    assert tensorsight.zero(torch.zeros(3)) and not tensorsight.zero(torch.tensor([0.0, 1e-30]))
    assert not tensorsight.zero(torch.tensor([0.0, NAN])) and not tensorsight.zero(torch.empty(0))
    assert tensorsight.zero(np.zeros(4, dtype=np.int64)) and tensorsight.zero(0.0)
    fresh = nn.Linear(2, 2)
    assert not tensorsight.zero(fresh)  # no gradient yet: nothing to call zero
    model = model_with_grads()
    assert not tensorsight.zero(model)
    for p in model.parameters():
        p.grad.zero_()
    assert tensorsight.zero(model)

    assert tensorsight.exploding(torch.tensor([1.0, -2e4])) and not tensorsight.exploding(
        torch.tensor([1.0, -2e4]), 1e5
    )
    assert tensorsight.exploding(torch.tensor([NAN])) and tensorsight.exploding(np.array([3.0]), 2)

    weights = torch.ones(3)
    flags = []
    for i in range(3):
        if i == 2:
            weights = weights * 2
        flags.append(tensorsight.changed(weights))
    assert flags == [False, False, True]

    assert tensorsight.grad_missing(fresh) and not tensorsight.grad_missing(model)
    frozen = nn.Linear(2, 2).requires_grad_(False)
    assert not tensorsight.grad_missing(frozen)


def test_rank_and_step_outside_distributed(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert tensorsight.rank() == 0 and tensorsight.world_size() == 1 and tensorsight.on_rank(0)
    assert not tensorsight.on_rank(1, 2)
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert tensorsight.rank() == 2 and tensorsight.world_size() == 4 and tensorsight.on_rank([1, 2])
    assert conditions.is_distributed()
    assert isinstance(tensorsight.step(), int) and tensorsight.step() >= 1


@pytest.mark.parametrize(
    ("call", "fallback"),
    [
        (lambda: tensorsight.nan("loss"), False),
        (lambda: tensorsight.inf(object()), False),
        (lambda: tensorsight.nonfinite(np.array(["a"], dtype=object)), False),
        (lambda: tensorsight.spike(torch.ones(2), factor=-1), False),
        (lambda: tensorsight.spike("x"), False),
        (lambda: tensorsight.shape_is(3.5, (1,)), False),
        (lambda: tensorsight.shape_is(torch.ones(2), "2"), False),
        (lambda: tensorsight.shape_is(torch.ones(2), (1.5,)), False),
        (lambda: tensorsight.wrong_device(torch.ones(2), device="not-a-device"), False),
        (lambda: tensorsight.exploding(torch.ones(2), limit="big"), False),
        (lambda: tensorsight.zero("0"), False),
        (lambda: tensorsight.changed({1, "a"}), False),
        (lambda: tensorsight.grad_missing(3), False),
        (lambda: tensorsight.on_rank("0"), False),
    ],
)
def test_misuse_returns_false_and_never_raises(call, fallback):
    assert call() is fallback


@pytest.mark.parametrize("misuse", ["model", 42, object()])
def test_grad_norm_misuse_is_falsy_and_compares_false_with_any_threshold(misuse):
    value = tensorsight.grad_norm(misuse)
    assert math.isnan(value) and isinstance(value, float)
    assert not value  # a bare `tensorsight.grad_norm(42)` condition is False, as the report says
    assert not (value > 1e3) and not (value < 1e-7) and not (value == 0)


def test_grad_norm_of_a_real_model_keeps_its_truth_value():
    assert tensorsight.grad_norm(model_with_grads()) > 0 and bool(tensorsight.grad_norm(model_with_grads()))
    assert not tensorsight.grad_norm(nn.Linear(2, 2))  # no backward yet


def test_grad_norm_before_backward_is_no_gradients_and_no_threshold_fires(capsys):
    """Before any backward neither "exploding" (> 1e3) nor "vanishing" (< 1e-7) may stop, and nothing reads as NaN."""
    model = nn.Linear(2, 2)
    for before_backward in (model, model.parameters(), torch.optim.SGD(model.parameters()), [model.weight.grad]):
        value = tensorsight.grad_norm(before_backward)
        assert not value and not (value > 1e3) and not (value < 1e-7) and not (value == 0)
        assert repr(value) == "nan (no gradients yet)" and f"{value}" == "nan (no gradients yet)"
    assert capsys.readouterr().err == ""  # not misuse: nothing is reported
    model(torch.ones(1, 2)).sum().backward()
    assert tensorsight.grad_norm(model) > 1e-7  # real gradients: a number again
    model.zero_grad(set_to_none=False)
    assert tensorsight.grad_norm(model) == 0.0 and tensorsight.grad_norm(model) < 1e-7  # zero gradients do vanish
    model.zero_grad(set_to_none=True)
    assert not (tensorsight.grad_norm(model) < 1e-7)


class Masking(torch.Tensor):
    """A subclass whose reductions hide NaN and that counts its ``__torch_function__`` calls."""

    calls = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        Masking.calls += 1
        if getattr(func, "__name__", "") in ("sum", "isnan", "isfinite", "isinf", "norm", "_foreach_norm", "any"):
            return torch.tensor(0.0)
        return super().__torch_function__(func, types, args, kwargs or {})


class Refusing(torch.Tensor):
    """A tensor subclass that refuses every op."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError("this tensor refuses to be read")


def test_predicates_never_run_a_subclass_torch_function():
    masked = torch.tensor([1.0, NAN, 3.0]).as_subclass(Masking)
    clean = torch.tensor([1.0, 2.0]).as_subclass(Masking)
    Masking.calls = 0
    assert tensorsight.nan(masked) and tensorsight.nonfinite([masked]) and not tensorsight.nan(clean)
    assert tensorsight.exploding(masked) and not tensorsight.zero(clean) and tensorsight.grad_norm(clean) > 1
    assert tensorsight.shape_is(masked, (3,)) and not tensorsight.wrong_device(masked, clean)
    tensorsight.spike(clean)
    tensorsight.changed(clean)
    assert Masking.calls == 0
    # a subclass that refuses every op is read all the same, as the plain tensor it wraps
    refusing = torch.tensor([1.0, NAN]).as_subclass(Refusing)
    assert tensorsight.nan(refusing) and tensorsight.grad_norm(refusing) == math.inf


def test_an_exception_inside_a_predicate_becomes_false_and_a_report(capsys, reported):
    def refusing_parameters():
        yield torch.ones(2)
        raise RuntimeError("this iterator refuses to go on")

    assert tensorsight.nan(refusing_parameters()) is False
    assert not tensorsight.grad_norm(refusing_parameters())
    err = capsys.readouterr().err
    assert "tensorsight.nan(...)" in err and "refuses" in err and "the condition is False" in err
    assert any("refuses" in e["message"] for e in reported)


def test_misuse_is_reported_once_per_call_site_on_stderr_and_as_an_event(capsys, reported):
    for _ in range(3):
        tensorsight.nan("a string")  # one call site, three evaluations
    err = capsys.readouterr().err
    assert err.count("tensorsight.nan(...)") == 1
    assert "test_predicates.py:" in err and "got str" in err
    matching = [e for e in reported if "got str" in e["message"]]
    assert len(matching) == 1
    assert matching[0]["expression"] == "tensorsight.nan(...)"


def test_predicates_change_nothing_in_the_program():
    torch.manual_seed(0)
    w = torch.randn(4, 4, requires_grad=True)
    loss = (w * 2).sum()
    activations = torch.randn(16, 4) * w[0]
    model = model_with_grads()
    versions = [t._version for t in (w, loss, activations)]
    grad_fn = loss.grad_fn
    state = torch.get_rng_state()
    params = [p.detach().clone() for p in model.parameters()]
    for predicate in (tensorsight.nan, tensorsight.nonfinite, tensorsight.spike, tensorsight.zero, tensorsight.changed):
        predicate(loss)
        predicate(activations)
        predicate(model)
    tensorsight.grad_norm(model)
    tensorsight.exploding(activations)
    tensorsight.shape_is(activations, (None, 4))
    assert [t._version for t in (w, loss, activations)] == versions
    assert loss.grad_fn is grad_fn and w.grad is None
    assert torch.equal(torch.get_rng_state(), state)
    assert all(torch.equal(a, b) for a, b in zip(params, model.parameters(), strict=True))
