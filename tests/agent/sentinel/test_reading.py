"""How the sentinel reads the program (agent/sentinel/reading.py): the user's frame (looking through our op-call
frames), the tensors in a value, counts, module names and the wrappers peeled off a module."""

import sys

import pytest
import torch
from torch import nn

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
