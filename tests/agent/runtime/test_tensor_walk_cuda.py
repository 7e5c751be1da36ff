"""agent.runtime.tensor_walk on CUDA tensors (runs where a GPU is present; skipped elsewhere): the batched NaN/Inf
check the sentinel and the conditions run at every boundary finds exactly the poisoned tensors of a group, with one
reduction per tensor (one fused norm for many) and one device synchronisation for the whole group."""

from __future__ import annotations

import torch

from support.cuda import count_syncs, needs_cuda
from tensorsight.agent.runtime.tensor_walk import FOREACH_FROM, exact_counts, suspects
from tensorsight.core.nonfinite import NonFiniteCounts

pytestmark = needs_cuda


def group(count: int) -> list[torch.Tensor]:
    generator = torch.Generator(device="cuda").manual_seed(0)
    return [torch.randn(256, 64, device="cuda", generator=generator) for _ in range(count)]


def test_a_clean_group_costs_one_sync_few_or_many():
    for count in (3, FOREACH_FROM + 5):
        tensors = group(count)
        syncs, found = count_syncs(lambda tensors=tensors: suspects(tensors))
        assert found == [] and syncs == 1, (count, syncs)


def test_the_poisoned_tensors_of_a_group_are_found_and_counted_exactly():
    for count in (3, FOREACH_FROM + 5):
        tensors = group(count)
        tensors[1][7, 7] = float("nan")
        tensors[-1][0, :3] = float("inf")
        tensors.append(torch.ones(4, device="cuda", dtype=torch.float16) * 70000)  # f16 overflow: +Inf ×4
        assert suspects(tensors) == [1, count - 1, count]
        assert exact_counts([tensors[1], tensors[-2], tensors[-1]]) == NonFiniteCounts(1, 7, 0)


def test_the_check_changes_nothing():
    tensors = group(4)
    weight = torch.nn.Parameter(torch.randn(32, 32, device="cuda"))
    weight.grad = torch.full_like(weight, float("nan"))
    versions = [t._version for t in tensors] + [weight._version, weight.grad._version]
    assert suspects([*tensors, weight, weight.grad]) == [5]
    assert versions == [t._version for t in tensors] + [weight._version, weight.grad._version]
    assert weight.grad.grad_fn is None and all(t.grad_fn is None for t in tensors)
