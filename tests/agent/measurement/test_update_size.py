"""agent.measurement.update_size: the relative size of an optimizer's first updates, measured without touching the
program's tensors."""

from __future__ import annotations

import pytest

from tensorsight.agent.measurement.update_size import EARLY_STEPS, UpdateSizes

torch = pytest.importorskip("torch")


def _step(sizes: UpdateSizes, model, optimizer) -> None:
    optimizer.zero_grad()
    model(torch.ones(4, 3)).pow(2).mean().backward()
    sizes.before(optimizer)
    optimizer.step()
    sizes.after(optimizer)


def test_a_large_learning_rate_moves_the_weights_by_a_large_share_of_their_size():
    torch.manual_seed(0)
    small, large = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    large.load_state_dict(small.state_dict())
    sizes = UpdateSizes(torch)
    slow, fast = torch.optim.SGD(small.parameters(), lr=1e-3), torch.optim.SGD(large.parameters(), lr=1.0)
    for _ in range(3):
        _step(sizes, small, slow)
        _step(sizes, large, fast)
    assert len(sizes.ratios[id(slow)]) == 3 and max(sizes.ratios[id(slow)]) < 0.01
    assert min(sizes.ratios[id(fast)]) > 10 * max(sizes.ratios[id(slow)])


def test_only_the_first_steps_are_measured_and_the_parameters_are_not_written():
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    sizes = UpdateSizes(torch)
    for _ in range(EARLY_STEPS + 3):
        optimizer.zero_grad()
        model(torch.ones(4, 3)).sum().backward()
        versions = [p._version for p in model.parameters()]
        sizes.before(optimizer)
        assert [p._version for p in model.parameters()] == versions  # the snapshot writes nothing
        optimizer.step()
        sizes.after(optimizer)
    assert len(sizes.ratios[id(optimizer)]) == EARLY_STEPS
