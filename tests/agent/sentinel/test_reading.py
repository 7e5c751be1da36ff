"""How the sentinel reads the program (agent/sentinel/reading.py): the user's frame (looking through our op-call
frames), the tensors in a value, counts, module names and the wrappers peeled off a module."""

import sys

import pytest
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from tensorsight.agent.runtime.op_calls import call_as_caller
from tensorsight.agent.sentinel.reading import (
    display_module,
    elements,
    fast_suspects,
    mixed_precision,
    module_label,
    module_names,
    state_tensors,
    tensors_in,
    unwrap,
    user_frame,
)


def test_the_user_frame_is_the_test_itself():
    assert user_frame() is sys._getframe()


def test_the_user_frame_looks_through_generated_code_and_op_call_frames():
    here = sys._getframe()
    from_string = eval("user_frame()", {"user_frame": user_frame})  # a "<string>" frame is not user code
    assert from_string is here
    assert call_as_caller(user_frame, (), {}, here) is here  # the op-call frame carries this file's name


def test_tensors_in_nested_outputs_and_the_shallow_limit():
    a, b, c = torch.ones(1), torch.zeros(2), torch.ones(3)
    assert tensors_in({"logits": a, "aux": [b, (c, 1.0)], "n": 3}) == [a, b, c]
    assert tensors_in((((a,),),), shallow=True) == []
    assert tensors_in((((a,),),)) == [a]
    assert tensors_in(((a,),), shallow=True) == [a]
    assert tensors_in("text") == []


def test_elements_and_fast_suspects():
    clean, bad = torch.ones(2, 3), torch.tensor([1.0, float("inf")])
    assert elements([clean, bad, "x"]) == 8
    assert fast_suspects([]) == [] and fast_suspects([clean, bad]) == [1]


def test_fast_suspects_finds_nan_and_inf_in_every_kind_of_tensor():
    nan, inf = float("nan"), float("inf")
    cases = [
        torch.tensor([1.0, nan]),  # float32: the short path
        torch.tensor([1.0, -inf], dtype=torch.float64),
        nn.Parameter(torch.tensor([inf, 2.0])),
        torch.tensor([1.0, nan], dtype=torch.float16),  # half precision: tensor_walk.suspects
        torch.tensor([1.0, inf], dtype=torch.bfloat16),
        torch.tensor([complex(1.0, nan)]),
        torch.tensor([[0.0, nan], [1.0, 2.0]]).t(),  # not contiguous
        torch.tensor([1.0, nan]).to_sparse(),
    ]
    for bad in cases:
        assert fast_suspects([torch.ones(3), bad, torch.arange(3)]) == [1], bad
    many = [torch.ones(2) for _ in range(12)] + [torch.tensor([nan])]  # many tensors: one fused reduction first
    assert fast_suspects(many) == [12]
    assert fast_suspects([torch.ones(4), torch.arange(4), torch.tensor([True]), torch.empty(0)]) == []


def test_fast_suspects_flags_finite_values_whose_sum_overflows():
    huge = torch.full((4,), 3e38)  # finite, but the sum overflows: a suspect that exact counts then clear
    assert fast_suspects([huge]) == [0]


def test_fast_suspects_is_a_good_guest():
    weight = torch.randn(3, 3, requires_grad=True)
    made = (weight * 2).tanh()
    versions, grad_fn = (weight._version, made._version), made.grad_fn
    reductions_of_tracked = []

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func.overloadpacket is not torch.ops.aten.detach and any(
                isinstance(a, torch.Tensor) and a.requires_grad for a in args
            ):
                reductions_of_tracked.append(func)
            return func(*args, **(kwargs or {}))

    with Recorder():
        assert fast_suspects([weight, made]) == []
    assert reductions_of_tracked == []  # only detached aliases are reduced: no autograd node is recorded
    assert (weight._version, made._version) == versions and made.grad_fn is grad_fn and weight.grad is None


def test_mixed_precision_follows_autocast():
    assert not mixed_precision()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert mixed_precision()


def test_module_names_labels_and_state():
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    names = module_names(model)
    assert module_label(names, model[1]) == "1 (BatchNorm1d)" and module_label(names, model) == "Sequential"
    assert module_label(names, nn.ReLU()) == "ReLU"  # not part of this model
    assert len(state_tensors(model)) == 2 + 2 + 3  # weight, bias; BatchNorm weight, bias; 3 buffers


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.compile imports torch.jit
def test_wrappers_are_peeled_off():
    model = nn.Linear(2, 2)
    wrapped = nn.DataParallel(torch.compile(model))
    assert unwrap(wrapped) is model and display_module(wrapped) == "Linear"
    assert unwrap(model) is model
