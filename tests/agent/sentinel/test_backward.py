"""Gradients born in backward (agent/sentinel/backward.py), in process with the real hooks: inside a module, the
boundary check before ``optimizer.step()`` replays the module's backward and names the op and its autograd node; an
op outside modules is watched through its node and reported once ``backward()`` returns, at the op's line."""

import sys

import torch
from torch import nn

from tensorsight.agent.sentinel.backward import flush_pending, locate_backward_birth
from tensorsight.agent.sentinel.state import sw
from tensorsight.core.nonfinite import NonFiniteCounts


class SqrtOfZero(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)
        with torch.no_grad():
            self.fc.weight.zero_()
            self.fc.bias.zero_()

    def forward(self, x):
        return torch.sqrt(self.fc(x))  # sqrt(0) is finite; its gradient is not


SQRT_LINE = SqrtOfZero.forward.__code__.co_firstlineno + 1


def test_a_gradient_born_inside_a_module_is_located_by_a_backward_replay(armed):
    model = SqrtOfZero()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(2, 3)).sum().backward()
    assert sw.last is None  # the forward was finite
    weight = model.fc.weight.detach().clone()
    optimizer.step()
    record = sw.last
    assert record is not None and (record.phase, record.op, record.node) == ("backward", "torch.sqrt", "SqrtBackward0")
    assert (record.file, record.line, record.module) == (__file__, SQRT_LINE, "SqrtOfZero")
    assert record.title == "Inf born here" and record.details == {"replayed": True}
    assert model.fc.bias.grad.isinf().all()  # the program's own gradients
    assert not model.fc.weight.isfinite().any() and weight.isfinite().all()  # the step ran as it would without us


class Regressor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 1)

    def forward(self, x):
        return self.fc(x)


def test_nan_a_linear_backward_makes_of_an_infinite_gradient_says_what_the_gradient_held(armed):
    model = Regressor()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    features = torch.tensor([[1.0, 0.0, 2.0], [3.0, 0.0, 1.0]])  # a feature that is 0 in every row
    targets = torch.tensor([[0.5], [-float("inf")]])  # log(0) of an unsold house: data the program loaded
    loss = nn.functional.mse_loss(model(features), targets)
    loss.backward()  # the loss's gradient is +Inf; the weight's gradient of the zero feature is 0 * Inf = NaN
    optimizer.step()
    record = sw.last
    assert record is not None and (record.phase, record.node) == ("backward", "AddmmBackward0"), record
    assert "from gradients holding" in record.message and "+Inf" in record.message, record.message
    assert "from finite gradients" not in record.message


def test_a_gradient_born_outside_modules_is_reported_when_backward_returns(armed):
    leaf = torch.zeros(3, requires_grad=True)
    nn.Identity()(leaf)  # the program's first module call: our mode joins
    line = sys._getframe().f_lineno + 1
    loss = torch.sqrt(leaf).sum()
    assert sw.last is None
    loss.backward()
    record = sw.last
    assert record is not None and (record.phase, record.op, record.line) == ("backward", "torch.sqrt", line)
    assert record.node == "SqrtBackward0" and "from finite gradients" in record.message
    assert sw.pending is None
    flush_pending()  # nothing left to report
    assert [event["type"] for event in armed].count("nonfinite") == 1


def test_without_a_replayable_call_the_report_names_the_parameters(armed):
    param = nn.Parameter(torch.ones(2))
    locate_backward_birth([param], [0], NonFiniteCounts(nan=2))
    record = sw.last
    assert (record.phase, record.op) == ("backward", "(backward)")
    assert "the gradients of some parameters hold 2 NaN after backward" in record.message
    assert "a replay of this step's modules did not locate the op" in record.message


def test_a_view_made_under_no_grad_and_written_in_place_is_not_watched():
    """``nn.init.orthogonal_`` writes a weight through ``view_as(...).copy_`` under no_grad: torch refuses to give that
    view a ``grad_fn`` (it raises), and there is no backward to watch anyway."""
    from tensorsight.agent.sentinel.backward import watch_backward

    weight = nn.Parameter(torch.ones(3, 4))
    with torch.no_grad():
        view = weight.view(12)
        view.copy_(torch.zeros(12))
    watch_backward(torch.Tensor.copy_, [view])  # no exception, no hook
    assert weight.grad_fn is None and float(weight.detach().sum()) == 0.0
