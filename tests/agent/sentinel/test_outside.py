"""Ops outside modules (agent/sentinel/outside.py), in process with the real hooks: after the first module call our
mode checks each op, finds a birth at its line (or at the data conversion), keeps a warning's location and a tensor
subclass's ``__torch_function__`` count, and leaves other modes above it in their order."""

import sys
import warnings

import numpy as np
import pytest
import torch
from torch import nn
from torch.overrides import TorchFunctionMode, _get_current_function_mode_stack

from tensorsight.agent.sentinel import outside
from tensorsight.agent.sentinel.state import st, sw


class Counted(torch.Tensor):
    calls = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        Counted.calls += 1
        return super().__torch_function__(func, types, args, kwargs or {})


class Passing(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


@pytest.fixture
def started(armed):
    """Armed, after the program's first module call: our mode is on the stack."""
    nn.Linear(2, 2)(torch.ones(1, 2))
    assert st.mode_on and sw.mode in _get_current_function_mode_stack()
    return armed


def test_a_birth_outside_modules_is_found_at_its_line(started):
    zeros = torch.zeros(3)
    line = sys._getframe().f_lineno + 1
    result = torch.log(zeros)
    assert torch.equal(result, torch.full((3,), float("-inf")))
    record = sw.last
    assert (record.op, record.phase, record.line, record.title) == ("torch.log", "forward", line, "Inf born here")
    assert record.file == __file__ and record.neginf == 3 and record.output is result


def test_a_value_carried_along_is_not_a_birth(started):
    torch.tensor([float("inf")]) * 2
    assert sw.last is None


def test_a_nan_from_numpy_came_in_with_the_data(started):
    line = sys._getframe().f_lineno + 1
    torch.as_tensor(np.array([1.0, np.nan]))
    record = sw.last
    assert record is not None and (record.phase, record.line) == ("data", line)
    assert "from a numpy array [2] float64: the value came in with the data" in record.message


def test_a_warning_keeps_the_programs_location(started):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        torch.tensor(torch.ones(2))  # "To copy construct from a tensor..."
    assert caught and all((w.filename, w.lineno) == (__file__, line) for w in caught)


def test_a_subclass_sees_its_ops_as_often_as_without_us(started):
    def run():
        before = Counted.calls
        (torch.ones(3).as_subclass(Counted) * torch.ones(3)).sum()
        return Counted.calls - before

    watched = run()
    sw.enabled = False
    outside.sync_mode()
    assert not st.mode_on
    assert run() == watched


def test_other_modes_stay_above_ours(started):
    other = Passing()
    with other:
        st.depth = 1  # a module call takes ours off, then back
        outside.sync_mode()
        assert _get_current_function_mode_stack() == [other]
        st.depth = 0
        outside.sync_mode()
        assert _get_current_function_mode_stack() == [sw.mode, other]
    assert _get_current_function_mode_stack() == [sw.mode]
