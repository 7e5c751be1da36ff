"""``agent.measurement.scalars``: gradient norms, the ``scalars`` values and histograms, as a good guest.

Real torch models and real gradients; every check compares with torch's own arithmetic, and the user's tensors must
come out untouched (no ``_version`` bump, no graph, no RNG draw).
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from tensorsight.agent.measurement import scalars
from tensorsight.agent.measurement.scalars import HISTOGRAM_BINS, ScalarRecorder, histogram_of, learning_rate


def trained_model():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model(torch.randn(5, 4)).pow(2).mean().backward()
    return model


def test_learning_rate_reads_the_first_group_even_as_a_tensor():
    model = trained_model()
    assert learning_rate(torch.optim.SGD(model.parameters(), lr=0.25)) == 0.25
    assert learning_rate(torch.optim.Adam(model.parameters(), lr=torch.tensor(0.01))) == pytest.approx(0.01)
    assert learning_rate(object()) is None


def test_gradient_norms_match_torch_per_parameter_and_in_total():
    model = trained_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    recorder = ScalarRecorder(torch, lambda: [model])
    recorder.before_step(optimizer)
    expected = {name: float(p.grad.norm()) for name, p in model.named_parameters()}
    assert recorder.norms == pytest.approx(expected, rel=1e-5)
    assert recorder.total_norm == pytest.approx(math.sqrt(sum(v * v for v in expected.values())), rel=1e-5)
    # the earliest and latest weight matrices, in the model's own order
    assert recorder.early_layer[0] == "0.weight" and recorder.late_layer[0] == "2.weight"
    values = recorder.values(loss=1.5, lr=0.1)
    assert values["loss"] == 1.5 and values["lr"] == 0.1 and values["grad_norm"] == recorder.total_norm
    assert {k for k in values if k.startswith("grad_norm/")} == {f"grad_norm/{n}" for n in expected}


def test_without_per_parameter_norms_only_the_total_is_kept():
    model = trained_model()
    recorder = ScalarRecorder(torch, lambda: [model], per_parameter=False)
    recorder.before_step(torch.optim.SGD(model.parameters(), lr=0.1))
    assert recorder.norms == {} and recorder.total_norm > 0
    assert set(recorder.values(None, None)) == {"grad_norm"}


def test_a_second_model_gets_a_prefixed_name_and_missing_grads_are_skipped():
    model, head = trained_model(), nn.Linear(2, 1)  # the head never ran backward: no grads
    optimizer = torch.optim.SGD([*model.parameters(), *head.parameters()], lr=0.1)
    recorder = ScalarRecorder(torch, lambda: [model, head])
    recorder.before_step(optimizer)
    assert set(recorder.norms) == {"0.weight", "0.bias", "2.weight", "2.bias"}
    assert [name for name, _ in recorder.named_parameters()][-2:] == ["Linear1.weight", "Linear1.bias"]


def test_a_nan_gradient_makes_the_total_nan_and_an_inf_makes_it_inf():
    model = trained_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    recorder = ScalarRecorder(torch, lambda: [model])
    model[0].bias.grad[0] = math.inf
    recorder.before_step(optimizer)
    assert recorder.total_norm == math.inf
    model[2].bias.grad[0] = math.nan
    recorder.before_step(optimizer)
    assert math.isnan(recorder.total_norm)


def test_no_gradients_means_no_norms():
    model = nn.Linear(3, 3)
    recorder = ScalarRecorder(torch, lambda: [model])
    recorder.before_step(torch.optim.SGD(model.parameters(), lr=0.1))
    assert recorder.total_norm is None and recorder.norms == {} and recorder.values(None, None) == {}


def test_measuring_leaves_the_users_tensors_alone():
    model = trained_model()
    params = list(model.parameters())
    versions = [(p._version, p.grad._version) for p in params]
    grads = [p.grad.clone() for p in params]
    rng = torch.get_rng_state()
    recorder = ScalarRecorder(torch, lambda: [model])
    recorder.before_step(torch.optim.SGD(params, lr=0.1))
    histograms = recorder.histograms()
    assert len(histograms) == 2 * len(params)
    assert [(p._version, p.grad._version) for p in params] == versions
    assert all(torch.equal(p.grad, g) for p, g in zip(params, grads, strict=True))
    assert all(p.grad.grad_fn is None for p in params)
    assert torch.equal(torch.get_rng_state(), rng)


def test_histogram_counts_every_value_into_its_bucket():
    values = torch.arange(100, dtype=torch.float32)
    histogram = histogram_of(torch, values, bins=10)
    assert histogram["counts"] == [10.0] * 10
    assert histogram["edges"][0] == 0.0 and histogram["edges"][-1] == 99.0 and len(histogram["edges"]) == 11
    stats = histogram["stats"]
    assert stats == {"min": 0.0, "max": 99.0, "num": 100.0, "sum": 4950.0, "sum_squares": float((values**2).sum())}
    assert histogram["sampled_every"] == 1


def test_histogram_ignores_non_finite_values_and_handles_a_constant():
    values = torch.tensor([1.0, math.nan, 2.0, math.inf, 3.0])
    histogram = histogram_of(torch, values)
    assert sum(histogram["counts"]) == 3 and histogram["stats"]["max"] == 3.0
    constant = histogram_of(torch, torch.full((7,), 2.0))
    assert sum(constant["counts"]) == 7 and constant["edges"][-1] > constant["edges"][0]
    assert len(constant["counts"]) == HISTOGRAM_BINS


def test_histogram_samples_big_tensors_deterministically(monkeypatch):
    monkeypatch.setattr(scalars, "HISTOGRAM_MAX_SAMPLES", 100)
    values = torch.arange(1000, dtype=torch.float32)
    first, second = histogram_of(torch, values), histogram_of(torch, values)
    assert first == second
    assert first["sampled_every"] == 10 and first["stats"]["num"] == 100.0


def test_no_histogram_for_tensors_without_plain_real_values():
    assert histogram_of(torch, torch.empty(0)) is None
    assert histogram_of(torch, torch.zeros(3, dtype=torch.complex64)) is None
    assert histogram_of(torch, torch.zeros(3, device="meta")) is None
    assert histogram_of(torch, torch.zeros(3, 3).to_sparse()) is None


def test_a_tensor_with_no_finite_value_has_a_histogram_of_its_nan_and_inf_counts():
    histogram = histogram_of(torch, torch.tensor([math.nan, math.inf, math.nan, -math.inf, math.nan]))
    assert histogram is not None and histogram["edges"] == [] and histogram["counts"] == []
    assert histogram["nonfinite"] == {"nan": 3, "posinf": 1, "neginf": 1}
    mixed = histogram_of(torch, torch.tensor([1.0, math.nan, 2.0, -math.inf]))
    assert sum(mixed["counts"]) == 2 and mixed["nonfinite"] == {"nan": 1, "posinf": 0, "neginf": 1}
    assert histogram_of(torch, torch.arange(4.0))["nonfinite"] == {"nan": 0, "posinf": 0, "neginf": 0}
