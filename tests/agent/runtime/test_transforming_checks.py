"""``agent.runtime.transforming`` in process: the check Dynamo folds, the hook wrapper that stands aside, the
compiled-module warning that only the program's hooks raise, and our modes off the stack during a compiled call.
End to end (real programs under the doctor and a debug session) is tests/agent/runtime/test_transforming.py."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn
from torch.nn.modules import module as torch_module
from torch.overrides import TorchFunctionMode, _get_current_function_mode_stack

from tensorsight.agent.runtime import transforming
from tensorsight.agent.runtime.untraced_hooks import untraced_hook, untraced_torch_function


@pytest.fixture
def armed():
    transforming._on_torch(torch)
    yield
    transforming.disarm()


def test_the_check_is_false_in_eager_code_and_true_in_a_trace_or_a_compiled_graph(armed):
    seen: list[bool] = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append(transforming.transforming())
            return x * 2

    probe = Probe()
    probe(torch.ones(2))
    torch.jit.trace(probe, torch.ones(2), check_trace=False)
    assert seen == [False, True]

    @torch.compile(backend="eager", fullgraph=True)
    def marked(x):
        return x + 1 if transforming.transforming() else x

    assert marked(torch.zeros(1)).item() == 1.0  # folded to True while Dynamo traced it
    assert not transforming.transforming()


def test_a_wrapped_hook_does_not_run_while_torch_traces(armed):
    calls: list[str] = []
    hook = untraced_hook(lambda module, args: calls.append(type(module).__name__))
    handle = torch_module.register_module_forward_pre_hook(hook)
    try:
        model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
        model(torch.ones(1, 3))
        assert calls == ["Sequential", "Linear", "ReLU"]
        calls.clear()
        torch.jit.trace(model, torch.ones(1, 3), check_trace=False)
        assert calls == []
    finally:
        handle.remove()


def test_a_mode_passes_the_op_on_while_torch_traces(armed):
    seen: list[bool] = []  # per op the mode handled: was torch tracing?

    class Counting(TorchFunctionMode):
        @untraced_torch_function
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(torch.jit.is_tracing())
            return func(*args, **(kwargs or {}))

    model = nn.Linear(3, 1)
    with Counting():
        traced = torch.jit.trace(model, torch.ones(2, 3), check_trace=False)
        model(torch.ones(2, 3))
    assert seen and not any(seen)  # the eager call was seen, nothing of the trace
    assert torch.equal(traced(torch.ones(2, 3)), model(torch.ones(2, 3)))


def test_only_the_programs_global_hooks_make_a_compiled_module_warn(armed):
    compiled = torch.compile(nn.Linear(2, 2), backend="eager")
    assert transforming._handles, "armed: our own pair of global hooks is registered"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled(torch.ones(1, 2))
    assert not [w for w in caught if "global hooks" in str(w.message)]
    theirs = torch_module.register_module_forward_pre_hook(lambda module, args: None)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compiled(torch.ones(1, 2))
        assert [w for w in caught if "global hooks" in str(w.message)]
    finally:
        theirs.remove()


def test_our_modes_are_off_the_stack_while_a_compiled_module_runs(armed):
    class Theirs(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    class Ours(Theirs):
        pass

    Ours.__module__ = "tensorsight.agent.example"  # what makes a mode ours: the package its class is defined in

    inside: list[list[str]] = []

    class Model(nn.Module):
        def forward(self, x):
            inside.append([type(m).__name__ for m in _get_current_function_mode_stack()])
            return x + 1

    compiled = torch.compile(Model(), backend="eager")
    ours, theirs = Ours(), Theirs()
    with ours, theirs:
        compiled(torch.ones(1))
        assert _get_current_function_mode_stack() == [ours, theirs]
    assert inside == [["Theirs"]]


def test_a_compiled_function_runs_with_our_modes_aside_and_a_mode_its_feature_dropped_stays_off(armed):
    from torch._dynamo.utils import counters

    class Theirs(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    class Ours(Theirs):
        pass

    Ours.__module__ = "tensorsight.agent.example"
    window = {"open": True}

    @torch.compile(backend="eager", fullgraph=True)
    def step(x):
        return x * 2

    counters.clear()
    kept, dropped, theirs = Ours(), Ours(), Theirs()
    transforming.own_mode(dropped, lambda: window["open"])
    with kept, dropped, theirs:
        assert step(torch.ones(2)).tolist() == [2.0, 2.0]
        assert _get_current_function_mode_stack() == [kept, dropped, theirs]
        window["open"] = False  # its feature took it off (say, at a step inside the compiled call)
        step(torch.ones(2))
        assert _get_current_function_mode_stack() == [kept, theirs]
        transforming._set_stack([kept, dropped, theirs])  # as the with-blocks expect to leave it
    # compiled once: each call started with the stack the program made ([theirs]), whatever ours did
    assert counters["stats"]["unique_graphs"] == 1
    assert sum(counters["recompiles"].values()) == 0
