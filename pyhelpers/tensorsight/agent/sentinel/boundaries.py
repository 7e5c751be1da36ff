"""The cheap, always-on tier of the sentinel: checks at the boundaries of a training step, through global module and
optimizer hooks (no per-op cost inside models).

- the outputs of each outermost module call (one sum per tensor on the CPU, else one sync per group of tensors,
  ``reading.fast_suspects``): a NaN/Inf there is told apart as carried in with the input, made by the parameters,
  made by the last ``optimizer.step()``, a deliberate Inf (a mask), or born in the forward, which is then replayed
  (``replay``);
- the gradients, once, before each ``optimizer.step()``: a birth nobody reported is located by a backward replay
  (``backward``);
- the parameters the last step produced, at the next forward (when they make its output non-finite);
- the tensors handed to ``backward()`` (the loss), before backward runs: a NaN/Inf there that the outside-modules
  mode did not see at its op (a step it did not observe) is located in the loss's autograd graph (``graph_search``)
  and named at the line that made it (``sites``), the same in every run.

The hooks also move the outside-modules mode (``outside.sync_mode``) off the stack at the outermost module call and
``optimizer.step()``, and back after; and they count steps for its budget.

Installed by ``tensorsight.agent.sentinel`` (``arm``, ``break_on_nonfinite``) once the program imports torch.
"""

from __future__ import annotations

import os
import sys
import time
import types
import weakref
from collections.abc import Callable
from typing import Any

from tensorsight.agent.debugger import pause
from tensorsight.agent.runtime import steps
from tensorsight.agent.runtime.forks import in_forked_children
from tensorsight.agent.runtime.guard import never_raise, report_once
from tensorsight.agent.runtime.op_calls import shielded
from tensorsight.agent.runtime.patches import Patches
from tensorsight.agent.runtime.tensor_walk import exact_counts, optimizer_parameters, suspects
from tensorsight.agent.runtime.transforming import skip_frames
from tensorsight.agent.runtime.untraced_hooks import untraced_hook
from tensorsight.agent.sentinel.backward import flush_pending, locate_backward_birth
from tensorsight.agent.sentinel.batches import check_batch, fetch_boundary
from tensorsight.agent.sentinel.call_replay import replay_call
from tensorsight.agent.sentinel.graph_search import GraphBirth, locate
from tensorsight.agent.sentinel.numpy_warnings import with_origin
from tensorsight.agent.sentinel.ops import inherited
from tensorsight.agent.sentinel.outside import (
    budget,
    check_conversion,
    end_period_inside_op,
    leave_forked_child,
    library_boundary,
    make_outside_mode,
    mode_on_stack,
    sync_mode,
)
from tensorsight.agent.sentinel.reading import (
    display_module,
    fast_suspects,
    running_frame,
    state_tensors,
    tensors_in,
    unwrap,
    user_frame,
)
from tensorsight.agent.sentinel.records import (
    counts_text,
    made_text,
    make_record,
    publish,
    publish_found_later,
    title_of,
)
from tensorsight.agent.sentinel.replay import replay_forward
from tensorsight.agent.sentinel.sites import Site, sites_for
from tensorsight.agent.sentinel.state import (
    MAX_SAVED_CALLS,
    MAX_SAVED_GRAD_ELEMENTS,
    Call,
    Step,
    lock,
    silenced,
    st,
    sw,
)
from tensorsight.core.l10n import t


@never_raise()
def install(torch: types.ModuleType) -> None:
    """Register the hooks. The outside-modules mode is not pushed here: ``sentinel._watch_from_the_first_op`` starts it
    (``sync_mode``) once torch is imported, and the module and ``backward()`` boundaries put it on and off after."""
    with lock:
        if sw.installed:
            return
        sw.installed = True
    from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    sw.cuda_present = bool(torch.cuda.is_available())
    sw.tensor_type = torch.Tensor
    sw.mode = make_outside_mode(torch)
    in_forked_children(leave_forked_child)
    sw.handles.append(register_module_forward_pre_hook(_timed(_before_module)))
    sw.handles.append(register_module_forward_hook(_timed(_after_module), with_kwargs=True, always_call=True))
    sw.handles.append(register_optimizer_step_pre_hook(_timed(_before_step)))
    sw.handles.append(register_optimizer_step_post_hook(_timed(_after_step)))
    sw.patches = Patches("sentinel")
    check = _timed(_before_backward)
    for name, at in (("backward", "tensors"), ("grad", "outputs")):
        sw.patches.replace(torch.autograd, name, lambda original, at=at: _backward_boundary(original, at, check))
    sw.patches.replace(torch, "from_numpy", lambda original: _conversion_boundary(original, _timed(check_conversion)))
    import torch.utils.data.dataloader as dataloader

    for owner in (torch.optim.Optimizer, torch.nn.Module):
        sw.patches.replace(owner, "zero_grad", library_boundary)
    fetched = _timed(check_batch)
    sw.patches.replace(dataloader._BaseDataLoaderIter, "__next__", lambda original: fetch_boundary(original, fetched))
    steps.arm()
    if sw.origin == "debugger":
        pause.hide_agent_files()


def _timed(hook: Callable[..., None]) -> Callable[..., None]:
    """The hook, its own time handed to the budget (the sentinel's whole cost answers to one target), run untraced
    by the debugger (``untraced_hooks``)."""
    clock = time.perf_counter

    @untraced_hook
    def timed(*args: Any) -> None:
        began = clock()
        try:
            hook(*args)
        finally:
            budget.boundary_spent(clock() - began)

    return timed


def _uninstall() -> None:
    """Remove the hooks (called from the training thread once disarmed and the mode is off)."""
    with lock:
        for handle in sw.handles:
            handle.remove()
        sw.handles.clear()
        if sw.patches is not None:
            sw.patches.restore()
        sw.installed = False


# ---- module hooks ---------------------------------------------------------------------------------------------------


def _before_module(module: Any, args: Any) -> None:
    if st.busy:
        return
    if st.replay is not None:
        st.stack.append(module)
        return
    try:
        st.depth += 1
        if st.depth == 1:
            st.started = True
            st.module_periods += 1
            st.observing = budget.period_ended()
            sync_mode()
            if sw.enabled:
                flush_pending()
                st.open_calls.append(_begin_call(module))
    except Exception as exc:  # noqa: BLE001
        report_once("sentinel-before-module", f"NaN sentinel: module hook failed: {type(exc).__name__}: {exc}")


def _after_module(module: Any, args: Any, *rest: Any) -> None:
    if st.busy:
        return
    if st.replay is not None:
        if st.stack:
            st.stack.pop()
        return
    # with_kwargs hooks get (module, args, kwargs, output); after an exception in forward torch passes (args, None)
    kwargs, output = (rest[0], rest[1]) if len(rest) == 2 else ({}, rest[0] if rest else None)
    try:
        st.depth = max(0, st.depth - 1)
        if st.depth == 0:
            call = st.open_calls.pop() if st.open_calls else None
            if (
                sw.enabled
                and not sw.first_reported
                and call is not None
                and call.module is module
                and output is not None
            ):
                call.args, call.kwargs = tuple(args), dict(kwargs or {})
                _check_outermost_output(module, call, output)
            if not sw.enabled and not st.mode_on:
                _uninstall()
            sync_mode()
    except Exception as exc:  # noqa: BLE001
        report_once("sentinel-after-module", f"NaN sentinel: module hook failed: {type(exc).__name__}: {exc}")
        st.busy = False
        sync_mode()


def _begin_call(module: Any) -> Call:
    torch = sys.modules["torch"]
    cuda_rng = None
    if sw.cuda_present and torch.cuda.is_initialized():
        cuda_rng = torch.cuda.get_rng_state_all()
    autocast: list[tuple[str, Any]] = []
    probe = getattr(torch._C, "_is_any_autocast_enabled", None)
    if probe is None or probe():
        for device in ("cuda", "cpu"):
            try:
                if torch.is_autocast_enabled(device):
                    autocast.append((device, torch.get_autocast_dtype(device)))
            except (RuntimeError, TypeError, AttributeError):
                continue
    return Call(module, torch.get_rng_state(), cuda_rng, autocast, torch.is_grad_enabled())


def _check_outermost_output(module: Any, call: Call, output: Any) -> None:
    outputs = [output] if type(output) is sw.tensor_type else tensors_in(output)
    with shielded(outputs):
        bad = fast_suspects(outputs)
        if not bad:  # the usual case, every step: the inputs are only read when there is something to explain
            _remember_call(call, outputs)
            return
    with shielded(outputs + tensors_in((call.args, call.kwargs))):
        st.busy = True
        try:
            _explain_outermost_output(module, call, output, outputs, bad)
        finally:
            st.busy = False


def _explain_outermost_output(module: Any, call: Call, output: Any, outputs: list[Any], bad: list[int]) -> None:
    counts = exact_counts([outputs[i] for i in bad])
    if not counts or silenced():
        _remember_call(call, outputs)
        return
    frame = user_frame()
    inputs = tensors_in((call.args, call.kwargs))
    incoming = exact_counts(inputs)
    name = display_module(module)
    if inherited(counts, incoming):
        what = t(
            "the input of {0} already holds {1}: it came from outside what TensorSight "
            "watches (data loading in another process, a loaded tensor)",
            name,
            counts_text(incoming),
        )
        if not st.observing:
            what += budget.note()
        what, where = with_origin(what, incoming, frame)
        publish(
            "data",
            "(model input)",
            counts,
            frame,
            module=name,
            what=what,
            **where,
            inputs=tuple(inputs),
            output=output,
            title=title_of(incoming, born=False),
        )
        return
    params = state_tensors(module)
    if exact_counts([params[i] for i in suspects(params)]):
        if _optimizer_birth(module):
            return
        publish(
            "forward",
            "(parameters)",
            counts,
            frame,
            module=name,
            what=t("the parameters or buffers of {0} already hold NaN/Inf, so its output does", name),
            output=output,
            title=title_of(counts, born=False),
        )
        return
    if not counts.nan and sw.explained_inf.get(id(module)) == (counts.posinf, counts.neginf):
        return  # the same deliberate Inf as before (a mask): no replay every step
    replay = replay_forward(call, stop_at=None)
    if isinstance(replay, str):
        what = t(
            "the output of {0} became non-finite in its forward; it was not replayed to find the op: {1}", name, replay
        )
    elif replay.found is None and replay.reproduced and not counts.nan:
        # the replay gave the same Inf and no op made it from finite inputs: it was written in (a -inf mask)
        sw.explained_inf[id(module)] = (counts.posinf, counts.neginf)
        return
    elif replay.found is None and not replay.reproduced:
        what = t(
            "the output of {0} became non-finite, but a re-run of its forward did not reproduce it "
            "(nondeterministic ops)",
            name,
        )
    else:
        return  # the replay found the op and reported it
    publish(
        "forward",
        "(not replayed)" if isinstance(replay, str) else "(not reproduced)",
        counts,
        frame,
        module=name,
        what=what,
        inputs=tuple(inputs),
        output=output,
        title=title_of(counts, born=True),
    )


def _remember_call(call: Call, outputs: list[Any]) -> None:
    """Keep the call for a backward replay, and catch the gradient that comes back to each output."""
    if not call.grad_enabled:
        return
    tracked = [t for t in outputs if t.requires_grad]
    if not tracked:
        return
    st.calls.append(call)
    if len(st.calls) > MAX_SAVED_CALLS:
        del st.calls[0]
    for index, tensor in enumerate(tracked):
        node = tensor.grad_fn
        if node is not None:  # a pre-hook on the node that made the output: cheaper than Tensor.register_hook
            node.register_prehook(_grad_catcher(call, index, tensor.output_nr))
            call.output_nodes[node] = tensor.detach()
    _remember_root(call.module)


def _grad_catcher(call: Call, index: int, slot: int) -> Callable[[Any], None]:
    def catch(grads: Any) -> None:
        grad = grads[slot] if slot < len(grads) else None
        if grad is not None and grad.numel() <= MAX_SAVED_GRAD_ELEMENTS:
            call.output_grads[index] = grad.detach()

    return catch


def _remember_root(module: Any) -> None:
    for ref in sw.known_roots:
        if ref() is module:
            return
    sw.known_roots.append(weakref.ref(module))
    del sw.known_roots[:-4]


# ---- the backward() boundary ---------------------------------------------------------------------------------------


def _backward_boundary(original: Callable[..., Any], roots_at: str, check: Callable[..., None]) -> Callable[..., Any]:
    """``torch.autograd.backward`` (what ``Tensor.backward`` calls) or ``torch.autograd.grad``, with the tensors it
    starts from checked first; the call itself is the program's, unchanged."""

    def backward(*args: Any, **kwargs: Any) -> Any:
        if st.module_periods == 0 and st.started and st.replay is None and not st.busy:
            _end_moduleless_period()
        st.module_periods = 0
        # a step whose ops outside modules the mode is checking needs no second look (on a GPU, one sync less)
        observed = st.observing and st.mode_on
        if sw.enabled and not sw.first_reported and not st.busy and st.replay is None and not observed:
            check(args[0] if args else kwargs.get(roots_at))
        return original(*args, **kwargs)

    return backward


def _end_moduleless_period() -> None:
    """A ``backward()`` with no outermost module call since the last one: a step of a loop that calls no module (a
    regression written by hand at module level). Its backward is the step's boundary, as the module call is
    elsewhere: the period ends here and the budget decides whether the next one is observed (the checks come back
    after a stretch that spent its share)."""
    st.observing = budget.period_ended()
    torch = sys.modules["torch"]
    if st.mode_on and not mode_on_stack(torch):  # called from our mode's handler for Tensor.backward
        end_period_inside_op()
    else:
        sync_mode()


def _conversion_boundary(original: Callable[..., Any], check: Callable[..., None]) -> Callable[..., Any]:
    """``torch.from_numpy``, which shares the array's memory and so never reaches a TorchFunctionMode: the tensor it
    returns is checked as the outside-modules mode checks ``torch.as_tensor`` (``outside.check_conversion``)."""

    def from_numpy(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        if st.mode_on and sw.enabled and not sw.first_reported and not st.busy:
            check(original, args, kwargs, result)
        return result

    skip_frames(from_numpy.__code__, calls_too=False)  # the program's call inside is Dynamo's to compile
    return from_numpy


def _before_backward(roots: Any) -> None:
    """The tensors ``backward()`` starts from (the loss): one sum each; a NaN/Inf nobody reported is located in
    their autograd graph while it is still whole."""
    try:
        tracked = [t for t in tensors_in(roots) if t.grad_fn is not None]
        if not tracked:
            return
        with shielded(tracked):
            bad = fast_suspects(tracked)
            if not bad:
                return
            counts = exact_counts([tracked[i] for i in bad])
        if not counts or silenced():
            return
        st.busy = True
        try:
            with shielded(tracked):
                _explain_backward_roots([tracked[i] for i in bad], counts)
        finally:
            st.busy = False
    except Exception as exc:  # noqa: BLE001
        st.busy = False
        report_once("sentinel-backward-roots", f"NaN sentinel: backward() check failed: {type(exc).__name__}: {exc}")


def _explain_backward_roots(roots: list[Any], counts: Any) -> None:
    known: dict[Any, Any] = {}
    for call in st.calls:
        known.update(call.output_nodes)
    birth = locate(roots, known)
    frame = user_frame()
    if birth is None:
        what = t(
            "the tensor passed to backward() holds {0}, and its autograd graph does not show which op made it "
            "(checked: the outputs of this step's module calls, finite; the ops after them, where their saved "
            "values allow)",
            counts_text(counts),
        )
        if not st.observing:
            what += budget.note()
        publish("forward", "(loss)", counts, frame, what=what, title=title_of(counts, born=True))
        return
    _publish_graph_birth(birth)


def _publish_graph_birth(birth: GraphBirth) -> None:
    node_name = type(birth.node).__name__
    sites = sites_for(birth.node)
    site: Site | None = sites[0] if sites else None
    op = site.op if site is not None else _op_of_node(node_name)
    what = made_text(op, birth.made, birth.output.numel(), birth.carried)
    if len(sites) > 1:
        lines = ", ".join(f"{os.path.basename(s.file)}:{s.line}" for s in sites[:4])
        what += t("; lines that make such an op: {0}", lines)
    elif site is None:
        what += t("; its line was not seen (it ran only in steps whose ops outside modules were not checked)")
    if not birth.exact:
        what += t(" (an input it did not keep was not read)")
    record = make_record(
        "forward",
        op,
        birth.made,
        None,
        what=what,
        file=site.file if site is not None else None,
        line=site.line if site is not None else None,
        node=node_name,
        inputs=tuple(birth.inputs),
        output=birth.output,
        title=title_of(birth.made, born=True),
    )
    record.details["located"] = "autograd graph"
    where = None
    if site is not None:
        frame = running_frame(site.code)  # the loop that wrote the loss inline
        if frame is not None:
            where = (site.file, site.line, id(frame), site.code)
        elif birth.exact and len(sites) == 1:
            # the function that ran the op has returned: run it again on copies, to stop on its line
            why = replay_call(site)
            if why is None:
                return
            record.details["not_replayed"] = why
    publish_found_later(record, where, t("backward() was called"))


def _op_of_node(node_name: str) -> str:
    """A user's name for the op behind a node nobody saw being made: ``LogBackward0`` -> ``torch.log``."""
    base = node_name.split("Backward", 1)[0]
    return f"torch.{base.lower()}" if base else node_name


# ---- optimizer hooks ------------------------------------------------------------------------------------------------


def _before_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    if st.busy:
        return
    try:
        st.in_step += 1
        sync_mode()
        st.step_number = steps.current_step() + 1
        st.grads_finite = True
        if not sw.enabled:
            return
        flush_pending()
        params, grads = [], []
        for group in optimizer.param_groups:
            for param in group["params"]:
                grad = param.grad
                if grad is not None:
                    params.append(param)
                    grads.append(grad)
        with shielded(grads):
            bad = fast_suspects(grads)
            counts = exact_counts([grads[i] for i in bad]) if bad else None
        if not counts:
            return
        st.grads_finite = False
        if silenced():
            return
        st.busy = True
        try:
            locate_backward_birth(params, bad, counts, note="" if st.observing else budget.note())
        finally:
            st.busy = False
    except Exception as exc:  # noqa: BLE001
        st.busy = False
        report_once("sentinel-before-step", f"NaN sentinel: optimizer hook failed: {type(exc).__name__}: {exc}")


def _after_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    """Remember the step; its parameters are checked by the next forward (see ``_optimizer_birth``)."""
    if st.busy:
        return
    try:
        if sw.enabled:
            frame = user_frame()
            where = (frame.f_code.co_filename, frame.f_lineno, id(frame), frame.f_code) if frame is not None else None
            st.last_step = Step(st.step_number, weakref.ref(optimizer), where, st.grads_finite)
        st.calls.clear()
    except Exception as exc:  # noqa: BLE001
        report_once("sentinel-after-step", f"NaN sentinel: optimizer hook failed: {type(exc).__name__}: {exc}")
    finally:
        st.in_step = max(0, st.in_step - 1)
        sync_mode()


def _optimizer_birth(module: Any) -> bool:
    """The outermost module's parameters hold NaN/Inf, and the last ``optimizer.step()`` started from finite
    gradients: that step made them. Checking parameters here, at the next forward, instead of after every step saves
    a pass over all weights per step; the stop still points at the ``optimizer.step()`` line."""
    last = st.last_step
    optimizer = last.optimizer() if last is not None else None
    if last is None or optimizer is None or not last.grads_finite:
        return False
    names = {id(p): name for name, p in unwrap(module).named_parameters()}
    params = [p for p in optimizer_parameters(optimizer) if id(p) in names]
    bad = [i for i in suspects(params) if exact_counts([params[i]])]
    if not bad:
        return False
    made = exact_counts([params[i] for i in bad])
    touched = [names[id(params[i])] for i in bad]
    shown = ", ".join(touched[:4]) + (t(" and {0} more", len(touched) - 4) if len(touched) > 4 else "")
    kind = type(optimizer).__name__
    lr = _learning_rate(optimizer)
    frame = user_frame()
    where = last.where
    file, line = (where[0], where[1]) if where is not None else (None, None)
    record = make_record(
        "optimizer",
        f"{kind}.step()",
        made,
        frame,
        file=file,
        line=line,
        what=t("{0}.step() made {1} in {2} from finite parameters and gradients", kind, counts_text(made), shown)
        + (f" (lr={lr:g})" if lr is not None else ""),
        step=last.number,
        output=tuple(params[i] for i in bad),
        title=title_of(made, born=True),
    )
    publish_found_later(record, where, t("the next forward"))
    return True


def _learning_rate(optimizer: Any) -> float | None:
    try:
        value = optimizer.param_groups[0].get("lr")
        return float(value) if value is not None else None
    except (AttributeError, IndexError, TypeError, ValueError):
        return None
