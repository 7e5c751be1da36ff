"""Ops outside modules (the loss written by hand, data conversion, metrics): checked op by op by a
``TorchFunctionMode`` that is on this thread's stack only while the sentinel observes them.

When it is on: armed, from the program's first torch op (``sentinel._watch_from_the_first_op``), outside every module
forward and ``optimizer.step()`` (the boundary hooks take it off at the outermost module call and put it back after, so
model internals pay nothing per op), never during a replay, and only in observed steps (``budget``: past the first
steps, a step is observed while checking its ops outside modules costs at most ``Budget.allowed`` of it:
``Budget.SHARE``, less what the boundary checks already cost of the sentinel's whole share; a program whose steps are
mostly tiny ops outside modules gets one observed step in ``stride``, ``benchmarks/bench_sentinel.py`` part 3).
In a step that is not observed, a birth outside modules is still caught at the next boundary (the model's input, the
gradients before ``optimizer.step()``), and the report says that the ops were not checked one by one.

What the program sees is unchanged: each op runs from a function compiled at the caller's line
(``runtime.op_calls``), so warnings keep their location, filters and deduplication; our own reads of its tensors are
shielded from a tensor subclass's ``__torch_function__`` (``op_calls.shielded``), which runs exactly as often as
without us.

Called by ``boundaries`` (``sync_mode``, ``make_outside_mode``); reports through ``records``.
"""

from __future__ import annotations

import contextlib
import sys
import time
import types
import weakref
from typing import Any

from tensorsight.agent.runtime import op_calls
from tensorsight.agent.runtime.guard import never_raise, report_once
from tensorsight.agent.runtime.op_calls import shielded
from tensorsight.agent.runtime.tensor_walk import exact_counts, is_tensor
from tensorsight.agent.runtime.transforming import skip_frames
from tensorsight.agent.runtime.untraced_hooks import untraced_torch_function
from tensorsight.agent.runtime.user_code import is_agent_file
from tensorsight.agent.sentinel.backward import flush_pending, watch_backward
from tensorsight.agent.sentinel.budget import budget
from tensorsight.agent.sentinel.numpy_warnings import with_origin
from tensorsight.agent.sentinel.ops import (
    BACKWARD,
    BACKWARD_FUNCS,
    GRADIENT_SAFE,
    INPLACE,
    SKIP,
    judge_inputs,
    op_name,
    policies,
    policy_of,
)
from tensorsight.agent.sentinel.reading import (
    elements,
    fast_suspects,
    mixed_precision,
    tensors_in,
    user_frame,
)
from tensorsight.agent.sentinel.records import counts_text, made_text, publish, title_of
from tensorsight.agent.sentinel.state import silenced, st, sw
from tensorsight.core.l10n import t


def sync_mode() -> None:
    """Put our outside-modules mode on this thread's stack exactly when it should be there: armed, after the first
    module call, no module forward, no optimizer step, no replay, no torch code whose ops are not the program's
    (``st.library``: a DataLoader fetch past the first ones, ``zero_grad``), an observed step.

    Our mode always sits at the bottom of the stack: other modes (the program's ``with torch.device(...)``, a
    profiler, the shape observers) keep their order and stay above it, so their ``__exit__``, which pops the top of
    the stack, still pops their own mode.
    """
    if sw.mode is None or st.busy:
        return
    want = sw.enabled and st.started and st.observing and st.depth == 0 and st.in_step == 0 and st.replay is None
    want = want and st.library == 0
    if want == st.mode_on:  # four times a step, mostly with nothing to change
        return
    torch = sys.modules.get("torch")
    if torch is None:
        return
    if want and not st.mode_on:
        _rebuild_stack(torch, with_ours=True)
        st.mode_on = True
    elif not want and st.mode_on:
        _take_off(torch)


def with_mode_off(function: Any, *args: Any) -> Any:
    """``function(*args)`` with our mode off this thread's stack (torch code that is not the program's, our own reads
    outside a hook that took it off): its ops pay no dispatch into the mode."""
    st.library += 1
    sync_mode()
    try:
        return function(*args)
    finally:
        st.library -= 1
        sync_mode()


def library_boundary(original: Any) -> Any:
    """A torch method whose ops are torch's own (``Optimizer.zero_grad``, ``Module.zero_grad``: thousands of
    ``p.grad`` reads and writes a step), run with our mode off: the program's call, unchanged."""

    def library_call(*args: Any, **kwargs: Any) -> Any:
        if not st.mode_on:
            return original(*args, **kwargs)
        return with_mode_off(lambda: original(*args, **kwargs))

    skip_frames(library_call.__code__, calls_too=False)  # the program's call inside is Dynamo's to compile
    return library_call


@never_raise()
def leave_forked_child() -> None:
    """In a forked child (a DataLoader worker, forked while our mode was on the stack): the mode comes off this
    thread's stack and stays off. The child runs none of the parent's steps, so nothing would take it off again, and
    every op of ``__getitem__`` and ``collate`` would go through us for the worker's whole life. A NaN made there is
    judged where it arrives: at the model's input in the parent, as carried in with the data (``boundaries``).
    Registered for every fork by ``boundaries.install`` (``runtime.forks``)."""
    if sw.mode is None:
        return
    torch = sys.modules.get("torch")
    if st.mode_on and torch is not None:
        _take_off(torch)
    st.mode_on = False
    sw.mode = None  # ``sync_mode`` never puts it back in this process


def _take_off(torch: types.ModuleType) -> None:
    """Our mode off this thread's stack, and nothing left watching for a moment to take it off."""
    _rebuild_stack(torch, with_ours=False)
    st.mode_on = False
    st.leave_watches.clear()


def _rebuild_stack(torch: types.ModuleType, with_ours: bool) -> None:
    size = torch._C._len_torch_function_stack()
    if with_ours and size == 0:  # the usual cases: nothing else on the stack, or ours on top
        torch._C._push_on_torch_function_stack(sw.mode)
        return
    if not with_ours and size and torch._C._get_function_stack_at(size - 1) is sw.mode:
        torch._C._pop_torch_function_stack()
        return
    from torch.overrides import _pop_mode, _push_mode

    others = []
    while torch._C._len_torch_function_stack():
        mode = _pop_mode()
        if mode is not sw.mode:
            others.append(mode)
    if with_ours:
        _push_mode(sw.mode)
    for mode in reversed(others):
        _push_mode(mode)


def make_outside_mode(torch: types.ModuleType) -> Any:
    from torch.overrides import TorchFunctionMode

    BACKWARD_FUNCS.update({torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad})
    clock = time.perf_counter
    call_as_caller, caller_frame = op_calls.call_as_caller, op_calls.caller_frame

    class _OutsideModulesMode(TorchFunctionMode):
        """On the stack only in observed steps, outside module forwards and optimizer steps: checks each op."""

        @untraced_torch_function  # the op itself runs traced: call_as_caller; passed straight on while torch transforms
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            entered = clock()
            kwargs = kwargs or {}
            caller = caller_frame(func, sys._getframe(1))
            if st.passthrough:  # this stretch spent its share: straight on until the next boundary
                result = call_as_caller(func, args, kwargs, caller)
                _watch_release(result)
                return result
            if is_agent_file(caller.f_code.co_filename):
                return func(*args, **kwargs)  # our own read (the phase clock's, the memory scan's): not the program's
            policy = policies.get(func)
            if policy is None:
                policy = policy_of(func)
            if policy == SKIP or not sw.enabled or sw.first_reported:
                return _timed_call(func, args, kwargs, caller, entered)
            if st.busy or st.depth or st.in_step or st.replay is not None:
                return _timed_call(func, args, kwargs, caller, entered)
            if policy == BACKWARD:
                result = call_as_caller(func, args, kwargs, caller)
                flush_pending()
                return result  # backward's own time, with our node hooks in it, is timed by the hooks
            was_clean = None
            if policy == INPLACE and args and is_tensor(args[0]):
                with shielded([args[0]]):
                    was_clean = not fast_suspects([args[0]])
            before = clock()
            result = call_as_caller(func, args, kwargs, caller)
            after = clock()
            try:
                _after_outside_op(func, args, kwargs, result, was_clean)
            except Exception as exc:  # noqa: BLE001 - never break the user's op
                st.busy = False
                report_once("sentinel-op", f"NaN sentinel: check after {op_name(func)} failed: {exc!r}")
            budget.spent(clock() - entered - (after - before))
            if budget.stretch_over():
                _stop_observing()
            return result

    def _timed_call(func: Any, args: Any, kwargs: Any, caller: Any, entered: float) -> Any:
        before = clock()
        result = call_as_caller(func, args, kwargs, caller)
        budget.spent(before - entered)
        if budget.stretch_over():
            _stop_observing()
        return result

    return _OutsideModulesMode()


def _stop_observing() -> None:
    """The stretch under way has spent its share (``Budget.stretch_over``): the rest of it is not observed. The mode
    cannot leave the stack from inside its own handler (torch puts it back when the handler returns), so it passes ops
    straight on until ``leave_between_ops`` or the next boundary takes it off."""
    st.observing = False
    st.passthrough = True


MAX_LEAVE_WATCHES = 16  # results of passed-on ops watched for their release (see ``_watch_release``)


def _watch_release(result: Any) -> None:
    """The mode went to passing ops on: watch this op's result for its release. The program drops most results of a
    stretch of small ops a line or two later, between two of its ops (outside our handler, where our mode is on the
    stack again): the weak reference's callback then takes the mode off, and the rest of the stretch runs at plain
    speed until the next boundary. Up to ``MAX_LEAVE_WATCHES`` results are watched."""
    if len(st.leave_watches) >= MAX_LEAVE_WATCHES:
        return
    target = result if isinstance(result, sw.tensor_type) else next(iter(tensors_in(result, shallow=True)), None)
    if target is not None:
        st.leave_watches.append(weakref.ref(target, _released))


@never_raise()
def _released(_reference: Any) -> None:
    """A watched result was released: take the mode off the stack if it is there now. Inside our own handler torch has
    taken it off for the call and puts it back after: then nothing is done and a later release tries again. Inside
    another mode's handler, that mode is the one off the stack, and stays the caller's to put back."""
    if not st.passthrough or not st.mode_on or st.busy or sw.mode is None:
        return
    torch = sys.modules.get("torch")
    if torch is None or not mode_on_stack(torch):
        return
    _take_off(torch)


def mode_on_stack(torch: types.ModuleType) -> bool:
    """Whether our mode is on this thread's stack now (inside its own handler torch has taken it off for the call)."""
    stack = torch._C
    return any(stack._get_function_stack_at(i) is sw.mode for i in range(stack._len_torch_function_stack()))


def end_period_inside_op() -> None:
    """A step boundary met inside an op our mode is handling (``Tensor.backward`` of a loop that calls no module):
    the mode cannot leave the stack from inside its own handler (torch puts it back when the handler returns), so an
    unobserved period passes ops straight on until a released result (``_watch_release``) or the next boundary
    takes it off."""
    if not st.observing:
        st.passthrough = True


def _after_outside_op(func: Any, args: Any, kwargs: Any, result: Any, was_clean: bool | None) -> None:
    if was_clean is not None:
        outputs = [args[0]]
    elif isinstance(result, sw.tensor_type):
        outputs = [result]
    else:
        outputs = tensors_in(result, shallow=True)
    if not outputs:
        return
    plain = len(outputs) == 1 and type(outputs[0]) is sw.tensor_type  # the usual op: no subclass to shield from
    with _UNSHIELDED if plain else shielded(outputs):
        bad = fast_suspects(outputs)
        if not bad:
            # Under no_grad the op records no autograd node, so there is no backward to watch; and reading
            # ``grad_fn`` of a view made under no_grad and then written in place (``nn.init.orthogonal_``'s
            # ``view_as(...).copy_``) raises in torch itself.
            if (
                getattr(func, "__name__", "") not in GRADIENT_SAFE
                and sys.modules["torch"].is_grad_enabled()
                and not mixed_precision()
            ):
                watch_backward(func, outputs)
            return
    # Something to explain (rare): only now are the inputs read, shielded as well.
    with shielded(outputs + tensors_in((args, kwargs))):
        _explain_outputs(func, args, kwargs, result, outputs, bad, was_clean)


_UNSHIELDED = contextlib.nullcontext()


@never_raise()
def check_conversion(func: Any, args: Any, kwargs: Any, result: Any) -> None:
    """A tensor built from outside data by a function no mode sees (``torch.from_numpy``), checked as the mode checks
    ``torch.as_tensor``: a NaN/Inf the array held came in with the data, at the caller's line. Only while the mode
    would be checking this thread's ops (an observed stretch outside modules), so it costs what the mode costs."""
    if not st.mode_on or st.passthrough or not st.observing or st.depth or st.in_step or st.replay is not None:
        return
    if not isinstance(result, sw.tensor_type) or not result.is_floating_point() or silenced():
        return
    bad = fast_suspects([result])
    if bad:
        _explain_outputs(func, args, kwargs, result, [result], bad, None)


def _explain_outputs(
    func: Any, args: Any, kwargs: Any, result: Any, outputs: list[Any], bad: list[int], was_clean: bool | None
) -> None:
    st.busy = True
    try:
        if was_clean is False:
            return  # an in-place op on a tensor that already held NaN/Inf
        counts = exact_counts([outputs[i] for i in bad])
        if not counts or silenced():
            return
        verdict = judge_inputs(args, kwargs, counts, skip_first=was_clean is not None)
        if verdict is None:
            return  # carried along from an input: not born here
        frame = user_frame()
        phase, source, carried = verdict
        what = made_text(op_name(func), counts, elements(outputs), carried)
        where: dict[str, Any] = {}
        if phase == "data":
            what = t(
                "{0} built a tensor with {1} (of {2} values) from {3}: the value came in with the data",
                op_name(func),
                counts_text(counts),
                elements(outputs),
                source,
            )
            what, where = with_origin(what, counts, frame)
        publish(
            phase,
            op_name(func),
            counts,
            frame,
            what=what,
            **where,
            inputs=tuple(tensors_in((args, kwargs), shallow=True)),
            output=result if was_clean is None else args[0],
            title=title_of(counts, born=phase != "data"),
        )
    finally:
        st.busy = False
