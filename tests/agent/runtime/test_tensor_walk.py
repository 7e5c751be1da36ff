"""agent.runtime.tensor_walk: what a value "contains" tensor-wise, and the batched NaN/Inf checks over it.

Real torch and numpy values: a model with gradients, an optimizer, nested containers, arrays and numbers; the
checks find exactly the poisoned tensors, count exactly, and leave every tensor as it was (no ``_version`` bump, no
autograd graph).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from tensorsight.agent.runtime.tensor_walk import (
    exact_counts,
    gather,
    gradients_of,
    nonfinite_of,
    optimizer_parameters,
    suspects,
)
from tensorsight.core.nonfinite import NONE_FOUND, NonFiniteCounts


def _model_with_grads() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
    model(torch.randn(5, 3)).sum().backward()
    return model


def test_gather_flattens_modules_optimizers_containers_arrays_and_numbers():
    model = _model_with_grads()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    params = list(model.parameters())
    found = gather({"model": model, "extra": [torch.ones(2), (np.zeros(3), 1.5)], "none": None})
    buffers = list(model.buffers())
    assert len(found.tensors) == 2 * len(params) + len(buffers) + 1  # parameters, buffers, gradients, the tensor
    assert len(found.arrays) == 1 and found.numbers == [1.5] and found.problems == []
    assert len(gather(model, with_grads=False).tensors) == len(params) + len(buffers)
    assert optimizer_parameters(optimizer) == params
    assert len(gradients_of(optimizer).tensors) == len(params)
    assert "got str" in gather(["text"]).problems[0]


def test_suspects_and_counts_find_exactly_the_poisoned_values_and_change_nothing():
    clean = torch.randn(100, requires_grad=True)
    poisoned = torch.randn(50)
    poisoned[3] = math.nan
    poisoned[7] = math.inf
    ints = torch.arange(10)
    versions = [t._version for t in (clean, poisoned, ints)]
    assert suspects([clean, poisoned, ints]) == [1]
    assert exact_counts([poisoned]) == NonFiniteCounts(1, 1, 0)
    assert [t._version for t in (clean, poisoned, ints)] == versions and clean.grad_fn is None
    array = np.array([1.0, -np.inf])
    assert nonfinite_of(gather([clean, poisoned, array, float("nan")])) == NonFiniteCounts(2, 1, 1)
    assert nonfinite_of(gather([clean, ints, 2.0])) is NONE_FOUND
