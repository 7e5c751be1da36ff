"""The always-on tier of the sentinel (agent/sentinel/boundaries.py), in process with its real global hooks: a NaN
born in a forward is located by a replay at its op, one carried in with the input is reported at the model call,
and parameters made non-finite by ``optimizer.step()`` are reported at the step's line."""

import sys

import torch
from torch import nn
from torch.overrides import _get_current_function_mode_stack

from tensorsight.agent.sentinel import boundaries
from tensorsight.agent.sentinel.state import st, sw


class SqrtNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        return torch.sqrt(self.fc(x) - 100.0)  # NaN born here


SQRT_LINE = SqrtNet.forward.__code__.co_firstlineno + 1


def nonfinite(seen):
    return [event for event in seen if event["type"] == "nonfinite"]


def test_install_registers_the_hooks_once(armed):
    handles = list(sw.handles)
    assert len(handles) == 4 and sw.installed
    boundaries.install(torch)
    assert sw.handles == handles


def test_a_forward_birth_is_located_at_its_op(armed):
    model, x = SqrtNet(), torch.ones(2, 3)
    weight, version = model.fc.weight.detach().clone(), model.fc.weight._version
    out = model(x)
    assert out.isnan().all()  # the program sees its own values
    record = sw.last
    assert (record.op, record.phase, record.line, record.module) == ("torch.sqrt", "forward", SQRT_LINE, "SqrtNet")
    assert record.details == {"replayed": True}
    assert [event["op"] for event in nonfinite(armed)] == ["torch.sqrt"]
    assert torch.equal(model.fc.weight, weight) and model.fc.weight._version == version
    model(x)  # quiet after the first birth
    assert len(nonfinite(armed)) == 1


def test_a_nan_in_the_input_came_in_with_the_data(armed):
    model = nn.Linear(3, 3)
    line = sys._getframe().f_lineno + 1
    model(torch.tensor([[1.0, float("nan"), 2.0]]))
    record = sw.last
    assert (record.phase, record.op, record.title, record.line) == ("data", "(model input)", "NaN came in here", line)
    assert "the input of Linear already holds 1 NaN" in record.message


def test_a_deliberate_inf_is_not_reported(armed):
    class Masked(nn.Module):
        def forward(self, x):
            return x.masked_fill(x < 0, float("-inf"))

    model = Masked()
    model(torch.tensor([-1.0, 1.0]))
    model(torch.tensor([-1.0, 1.0]))
    assert sw.last is None and id(model) in sw.explained_inf


def test_parameters_broken_by_the_optimizer_are_reported_at_the_step(armed):
    model = nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e38)
    big = torch.full((1, 2), 1e10)  # the weight's gradient: lr * 1e10 overflows float32
    model(big).sum().backward()
    step_line = sys._getframe().f_lineno + 1
    optimizer.step()
    assert sw.last is None
    model(big)
    record = sw.last
    assert (record.phase, record.op, record.line) == ("optimizer", "SGD.step()", step_line)
    assert "from finite parameters and gradients (lr=1e+38)" in record.message


def test_the_outside_mode_is_off_inside_modules_and_on_between_them(armed):
    seen = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append(st.mode_on or sw.mode in _get_current_function_mode_stack())
            return x + 1

    assert sw.mode not in _get_current_function_mode_stack()  # not before the first module call
    Probe()(torch.ones(1))
    assert seen == [False] and st.mode_on and sw.mode in _get_current_function_mode_stack()
