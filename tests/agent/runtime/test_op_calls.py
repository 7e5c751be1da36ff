"""Running the program's op from inside our modes (agent/runtime/op_calls.py): the op runs from a function compiled
at the caller's file and line, so a warning keeps the program's location and registry; our reads are shielded from a
tensor subclass's ``__torch_function__``."""

import sys
import warnings

import torch
from torch import nn

from tensorsight.agent.runtime.op_calls import (
    OP_CALL_NAME,
    call_as_caller,
    caller_frame,
    has_subclass,
    is_op_call,
    shielded,
)


class Counted(torch.Tensor):
    calls = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        Counted.calls += 1
        return super().__torch_function__(func, types, args, kwargs or {})


def warn_at_caller():
    warnings.warn("from python", UserWarning, stacklevel=2)


def test_a_python_warning_keeps_the_callers_file_and_line():
    frame = sys._getframe()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        call_as_caller(warn_at_caller, (), {}, frame)
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, line)]


def test_a_torch_warning_keeps_the_callers_file_and_line():
    frame, source = sys._getframe(), torch.ones(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        copied = call_as_caller(torch.tensor, (source,), {}, frame)  # "To copy construct from a tensor..."
    assert torch.equal(copied, source)
    assert caught and all((w.filename, w.lineno) == (__file__, line) for w in caught)


def test_once_per_location_applies_to_the_callers_registry():
    frame = sys._getframe()
    registry = frame.f_globals.setdefault("__warningregistry__", {})
    registry.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(3):
            call_as_caller(warn_at_caller, (), {}, frame)  # one line: warned once, in this module's registry
    assert len(caught) == 1
    assert any(key[0] == "from python" for key in registry if isinstance(key, tuple))


def test_op_call_frames_are_recognised_and_arguments_pass_through():
    seen = {}

    def op(*args, **kwargs):
        seen["code"] = sys._getframe(1).f_code
        return args, kwargs

    assert call_as_caller(op, (1, 2), {"k": 3}, sys._getframe()) == ((1, 2), {"k": 3})
    assert is_op_call(seen["code"]) and seen["code"].co_name == OP_CALL_NAME
    assert seen["code"].co_filename == __file__
    assert not is_op_call(sys._getframe().f_code)


def test_the_caller_frame_looks_through_the_functions_own_frame():
    def python_op():
        return caller_frame(python_op, sys._getframe())

    assert python_op() is sys._getframe()
    assert caller_frame(torch.log, sys._getframe()) is sys._getframe()


def test_has_subclass_ignores_parameters():
    assert not has_subclass([torch.ones(1), nn.Parameter(torch.ones(1))])
    assert has_subclass([torch.ones(1).as_subclass(Counted)])


def test_our_reads_under_shielded_do_not_run_the_subclass_torch_function():
    tensor = torch.ones(3).as_subclass(Counted)
    before = Counted.calls
    with shielded([tensor]):
        assert float(tensor.sum()) == 3.0
    assert Counted.calls == before
    tensor.sum()
    assert Counted.calls > before  # outside, the subclass sees its ops as always


def test_plain_tensors_are_not_shielded():
    with shielded([torch.ones(1)]):
        assert torch._C._is_torch_function_enabled()
    with shielded([]):
        assert torch._C._is_torch_function_enabled()
