"""``agent.runtime.steps``: the shared step counter, driven by real ``optimizer.step()`` calls.

torch's global optimizer post-hooks live in one module-level dict that ``Optimizer.step`` reads at each call; the
tests swap in an empty one (and fresh counter state), so the hook this module registers disappears after each test.
"""

from __future__ import annotations

import collections

import pytest
import torch
import torch.optim.optimizer as torch_optimizer

from tensorsight.agent.runtime import guard, steps


@pytest.fixture
def counter(monkeypatch):
    monkeypatch.setattr(torch_optimizer, "_global_optimizer_post_hooks", collections.OrderedDict())
    monkeypatch.setattr(steps, "_step", 0)
    monkeypatch.setattr(steps, "_per_optimizer", {})
    monkeypatch.setattr(steps, "_listeners", [])
    monkeypatch.setattr(steps, "_armed", False)
    monkeypatch.setattr(guard, "_reported", set())
    return steps


def sgd(lr: float = 0.1) -> torch.optim.SGD:
    weight = torch.nn.Parameter(torch.ones(3))
    weight.grad = torch.full((3,), 0.5)
    return torch.optim.SGD([weight], lr=lr)


def test_each_optimizer_step_counts_once(counter):
    counter.arm()
    optimizer = sgd()
    assert counter.current_step() == 0 and counter.step_count(optimizer) is None
    for _ in range(3):
        optimizer.step()
    assert counter.current_step() == 3
    assert counter.step_count(optimizer) == 3  # plain SGD keeps no per-parameter step state: we count


def test_two_optimizers_do_not_double_count(counter):
    counter.arm()
    generator, critic = sgd(), sgd()
    for _ in range(2):
        generator.step()
        critic.step()
    critic.step()
    assert counter.step_count(generator) == 2 and counter.step_count(critic) == 3
    assert counter.current_step() == 3


def test_listeners_hear_every_step_until_removed(counter):
    heard = []

    def listener(step, optimizer):
        heard.append((step, optimizer))

    optimizer = sgd()
    counter.add_step_listener(listener)  # arms the hook on first use
    counter.add_step_listener(listener)  # and adds a listener once
    optimizer.step()
    optimizer.step()
    counter.remove_step_listener(listener)
    counter.remove_step_listener(listener)  # unknown now: ignored
    optimizer.step()
    assert heard == [(1, optimizer), (2, optimizer)]
    assert counter.current_step() == 3


def test_arming_twice_registers_one_hook(counter):
    counter.arm()
    counter.arm("doctor")
    assert len(torch_optimizer._global_optimizer_post_hooks) == 1


def test_a_failing_listener_is_reported_once_and_the_others_still_run(counter, capsys):
    heard = []

    def broken(step, optimizer):
        raise ValueError("listener bug")

    counter.add_step_listener(broken)
    counter.add_step_listener(lambda step, optimizer: heard.append(step))
    optimizer = sgd()
    optimizer.step()
    optimizer.step()
    assert heard == [1, 2]
    err = capsys.readouterr().err
    assert err.count("listener bug") == 1


def test_counting_leaves_the_parameters_as_the_optimizer_left_them(counter):
    counter.arm()
    optimizer = sgd(lr=1.0)
    weight = optimizer.param_groups[0]["params"][0]
    state = torch.get_rng_state()
    optimizer.step()
    assert torch.equal(weight.detach(), torch.full((3,), 0.5))  # exactly SGD's update, nothing else
    assert weight.grad_fn is None
    assert torch.equal(torch.get_rng_state(), state)
