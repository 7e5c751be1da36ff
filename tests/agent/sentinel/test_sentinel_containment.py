"""The replay's containment rule (agent/sentinel/containment.py), in process on real modules: a forward whose effects
stay in the module (an EMA attribute, a counter, a list on ``self``, Dropout, BatchNorm) is replayed on a private
copy; one that reaches state outside it is not, with a reason naming what. The copy leaves the original untouched."""

import math
import random
from dataclasses import dataclass

import pytest
import torch
from torch import nn

from tensorsight.agent.sentinel.containment import private_copy, unsafe_reason
from tensorsight.core import l10n

CALLS = 0
LOG: list[int] = []
SCALE = torch.ones(4)


class SelfContained(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Dropout(0.1))
        self.ema = torch.zeros(4)
        self.calls = 0
        self.history: list[float] = []

    def forward(self, x):
        self.calls += 1
        out = self.helper(self.fc(x))
        self.ema.mul_(0.9).add_(out.detach().mean(dim=0))
        self.history.append(float(out.detach().sum()))
        return out / math.sqrt(4)

    def helper(self, x):
        return torch.relu(x) + len(self.history)


@dataclass
class Output:
    logits: torch.Tensor
    extra: float = 0.0


class ReturnsDataclass(nn.Module):
    def forward(self, x):
        return Output(logits=x * 2)


class WritesGlobal(nn.Module):
    def forward(self, x):
        global CALLS
        CALLS += 1
        return x


class AppendsToGlobal(nn.Module):
    def forward(self, x):
        LOG.append(1)
        return x


class ReadsGlobalTensor(nn.Module):
    def forward(self, x):
        return x * SCALE


class CountsOnClass(nn.Module):
    seen = 0

    def forward(self, x):
        type(self).seen += 1
        return x


class SharedClassList(nn.Module):
    registry: list[int] = []  # noqa: RUF012 - shared by every instance: the point of the test

    def forward(self, x):
        self.registry.append(1)
        return x


class Prints(nn.Module):
    def forward(self, x):
        print("forward")
        return x


class DrawsPythonRandom(nn.Module):
    def forward(self, x):
        return x * random.random()


def make_closure_module():
    counter = [0]

    class Closure(nn.Module):
        def forward(self, x):
            counter.append(1)
            return x

    return Closure()


class Counted(torch.Tensor):
    calls = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        Counted.calls += 1
        return super().__torch_function__(func, types, args, kwargs or {})


def test_a_forward_whose_effects_stay_in_the_module_is_replayable():
    assert unsafe_reason(SelfContained(), [torch.randn(8, 4)]) is None
    assert unsafe_reason(nn.Sequential(nn.Linear(4, 4), nn.GELU()), []) is None
    assert unsafe_reason(ReturnsDataclass(), []) is None  # a constructor sets attributes of the new object only


@pytest.mark.parametrize(
    ("module", "reason"),
    [
        (WritesGlobal(), "WritesGlobal.forward assigns the global variable CALLS"),
        (AppendsToGlobal(), "reads the global LOG (list)"),
        (ReadsGlobalTensor(), "reads the global SCALE (Tensor)"),
        (CountsOnClass(), "sets the attribute seen of an object outside the module"),
        (SharedClassList(), "SharedClassList.registry is a class attribute every instance shares"),
        (Prints(), "calls print()"),
        (DrawsPythonRandom(), "uses the module random"),
        (make_closure_module(), "reads the outer variable counter (list)"),
    ],
)
def test_a_forward_reaching_outside_its_module_is_not_replayed(module, reason):
    found = unsafe_reason(module, [torch.randn(8, 4)])
    assert found is not None and reason in found


@pytest.mark.parametrize(
    ("module", "reason"),
    [
        (WritesGlobal(), "WritesGlobal.forward asigna la variable global CALLS"),
        (AppendsToGlobal(), "lee la variable global LOG (list), que una segunda ejecución podría cambiar"),
        (CountsOnClass(), "asigna el atributo seen de un objeto fuera del módulo"),
        (SharedClassList(), "SharedClassList.registry es un atributo de clase que comparten todas las instancias"),
        (Prints(), "llama a print()"),
        (DrawsPythonRandom(), "usa el módulo random"),
        (make_closure_module(), "lee la variable exterior counter (list)"),
    ],
)
def test_the_reason_is_in_the_editor_s_language(module, reason):
    # it ends up in the first-NaN report ("... was not replayed: <reason>"), which a Spanish editor shows in Spanish
    l10n.set_language("es")
    try:
        found = unsafe_reason(module, [torch.randn(8, 4)])
    finally:
        l10n.set_language(None)
    assert found is not None and reason in found, found


def test_a_tensor_subclass_with_its_own_torch_function_is_checked_too():
    found = unsafe_reason(nn.Linear(4, 4), [torch.randn(2, 4).as_subclass(Counted)])
    assert found is not None and "Counted.__torch_function__" in found


def test_the_private_copy_changes_only_itself():
    torch.manual_seed(0)
    model = SelfContained()
    inputs = torch.randn(8, 4, requires_grad=True) * 2  # a non-leaf input, as most are
    versions = {name: t._version for name, t in [*model.state_dict().items(), ("ema", model.ema)]}
    copy, args, kwargs = private_copy(model, (inputs,), {})
    copy(*args, **kwargs)
    assert (model.calls, model.history, model.ema.tolist()) == (0, [], [0.0] * 4)
    assert {name: t._version for name, t in [*model.state_dict().items(), ("ema", model.ema)]} == versions
    assert int(model.fc[1].num_batches_tracked) == 0 and copy.calls == 1
    assert args[0] is not inputs and torch.equal(args[0], inputs.detach())
