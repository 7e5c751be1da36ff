"""Fixtures for the in-process tests of the NaN sentinel's sections: the sentinel's process-wide switches and this
thread's bookkeeping are saved and restored around each test, and ``armed`` installs the real global module and
optimizer hooks (origin "doctor": reports become events, no debugger stop) and removes them and our mode after."""

import collections

import pytest
import torch
import torch.nn.modules.module as torch_module
import torch.optim.optimizer as torch_optimizer
from torch.overrides import _get_current_function_mode_stack

from tensorsight.agent.runtime import events, steps
from tensorsight.agent.sentinel import boundaries, outside
from tensorsight.agent.sentinel.budget import budget
from tensorsight.agent.sentinel.state import ThreadState, st, sw

_THREAD_FIELDS = tuple(vars(ThreadState()))


@pytest.fixture
def fresh_sentinel():
    """Switches and thread state as a fresh process has them; the events the sentinel emits, collected."""
    saved_sw = dict(vars(sw))
    saved_st = {name: getattr(st, name) for name in _THREAD_FIELDS}
    saved_active = budget.active
    fresh = ThreadState()
    for name in _THREAD_FIELDS:
        setattr(st, name, getattr(fresh, name))
    sw.enabled, sw.origin, sw.first_reported, sw.last, sw.pending = False, "doctor", False, None, None
    sw.explained_inf, sw.known_roots = {}, []
    seen: list[dict] = []
    unsubscribe = events.subscribe(seen.append)
    try:
        yield seen
    finally:
        unsubscribe()
        for name, value in saved_st.items():
            setattr(st, name, value)
        vars(sw).update(saved_sw)
        budget.active = saved_active


@pytest.fixture
def armed(fresh_sentinel, monkeypatch):
    """The sentinel armed with its real hooks, every step observed; afterwards no hook and no mode of ours is left.

    torch keeps its global module and optimizer hooks in module-level dicts read at each call: fresh ones are swapped
    in (with fresh step-counter state), so the hooks registered here, ``steps``' included, go with the test."""
    for name in (
        "_global_forward_pre_hooks",
        "_global_forward_hooks",
        "_global_forward_hooks_with_kwargs",
        "_global_forward_hooks_always_called",
    ):
        monkeypatch.setattr(torch_module, name, collections.OrderedDict())
    for name in ("_global_optimizer_pre_hooks", "_global_optimizer_post_hooks"):
        monkeypatch.setattr(torch_optimizer, name, collections.OrderedDict())
    monkeypatch.setattr(steps, "_step", 0)
    monkeypatch.setattr(steps, "_per_optimizer", {})
    monkeypatch.setattr(steps, "_armed", False)
    budget.active = False
    sw.enabled = True
    sw.handles = []
    sw.installed = False
    boundaries.install(torch)
    try:
        yield fresh_sentinel
    finally:
        sw.enabled = False
        st.busy = False
        st.depth = st.in_step = 0
        outside.sync_mode()
        boundaries._uninstall()
        assert not any(type(m).__module__.startswith("tensorsight") for m in _get_current_function_mode_stack())
