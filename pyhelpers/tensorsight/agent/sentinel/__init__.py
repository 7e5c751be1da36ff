"""The NaN sentinel (``breakOnNonFinite``): stop at the op where the first NaN/Inf is born, in the user's frame.

Armed by the launch option ``breakOnNonFinite`` (the doctor arms it by default) or at run time by
``tensorsight.break_on_nonfinite(True)`` (the editor's toggle sends it through a DAP ``evaluate``). No code change.

What "born" means. An op is the producer when its output holds a NaN while no input did, or an Inf while every input
was finite. Later ops that merely carry the value along are not reported, and neither are deliberate values: an input
that is itself ``-inf`` (an attention mask, ``float("nan")`` written in code) is an input like any other. A tensor
built from outside data (a numpy array) that holds NaN/Inf is born at that conversion, in the "data" phase.

How it stays cheap (design: a global module hook cost 1.0–1.09×, an op-level TorchFunctionMode 1.13–1.24×). Two tiers:

- Always on, at the boundaries of a training step: ops outside any module (the loss written by hand, data
  conversion) go through a TorchFunctionMode that is on the mode stack only while no module's forward and no
  ``optimizer.step()`` runs (global module hooks take it off at the outermost module call and put it back after), so
  model internals pay nothing per op; the outputs of outermost module calls; the gradients, once, before each
  ``optimizer.step()``; the parameters it produced, at the next forward (when they would make its output
  non-finite). Each check is one reduction and one sync per group of tensors (``tensor_walk``).
- Only when a boundary check fails: a replay, the way JAX's ``debug_nans`` re-runs de-optimised. The failing outermost
  module's forward runs again, op by op under a checking mode, with the RNG state it had (dropout draws the same
  masks, in a forked RNG so the program's stream is untouched) and private copies of its buffers (BatchNorm running
  stats stay as they are). The first op whose output is born non-finite is where the debugger stops, in the replayed
  user frame, at that line. For a gradient born inside a module, the replay also runs backward from the gradient that
  arrived at the module's output, with a hook on every autograd node, then replays forward once more to stop at the
  op whose backward produced it. Ops outside modules are checked where they run: forward at the op; backward with a
  node hook per op, reported when ``backward()`` returns, pointing at the op's line.

How it stops: ``agent.pause.stop_in_frame`` presents the stop as an exception in the user's frame ("NaN born here"
and a reason naming the op, the module path, the phase, the step, the counts and the rank); Variables shows a
``(nonfinite)`` entry with the op's inputs and output, also reachable as ``tensorsight.last_nonfinite()``. Without a
debugger (the doctor, or no client) the same report becomes a ``nonfinite`` event and a ``nonfinite`` finding. Only
the first birth is reported: everything after it is its consequence, so the sentinel then goes quiet (and costs
less); ``break_on_nonfinite(True)`` re-arms it.

Limits (also in the README): code compiled by ``torch.compile`` is checked at its module boundary only; a forward
with Python side effects (counters, prints) repeats them once when replayed after a failure; with fp16 autocast,
non-finite gradients are left to the GradScaler (a skipped step is not reported); FSDP modules are not replayed.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import types
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tensorsight.agent.debugger import pause
from tensorsight.agent.runtime import events, identity, steps
from tensorsight.agent.runtime.guard import never_raise, report_once
from tensorsight.agent.runtime.lazy_import import when_imported
from tensorsight.agent.runtime.options import option
from tensorsight.agent.runtime.tensor_walk import (
    exact_counts,
    is_array,
    is_tensor,
    number_counts,
    optimizer_parameters,
    suspects,
)
from tensorsight.agent.runtime.user_code import is_user_file
from tensorsight.core.findings import Finding
from tensorsight.core.nonfinite import NonFiniteCounts

MAX_SAVED_CALLS = 8  # outermost module calls remembered per step for a backward replay
MAX_SAVED_GRAD_ELEMENTS = 1 << 22  # larger output gradients are not kept; the replay then starts from ones
MAX_SCANNED_NUMBERS = 10_000  # Python numbers read from list arguments when judging an op's inputs


# ---- the report ----------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class NonFiniteRecord:
    """One NaN/Inf birth: where, in which phase and step, and the values involved (shown in Variables)."""

    phase: str
    op: str
    title: str
    message: str
    file: str | None
    line: int | None
    step: int
    rank: int | None
    nan: int
    posinf: int
    neginf: int
    elements: int
    module: str | None = None
    node: str | None = None
    inputs: tuple[Any, ...] = ()
    output: Any = None
    incoming_grads: tuple[Any, ...] = ()
    produced_grads: tuple[Any, ...] = ()
    stopped_at: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"<{self.title}: {self.message}>"

    def event(self) -> dict[str, Any]:
        """The ``nonfinite`` event (design schema plus ``module``/``node``/``rank``/``title`` when known)."""
        data: dict[str, Any] = {
            "file": self.file,
            "line": self.line,
            "op": self.op,
            "phase": self.phase,
            "step": self.step,
            "nan": self.nan,
            "posinf": self.posinf,
            "neginf": self.neginf,
            "message": self.message,
            "title": self.title,
        }
        for key in ("module", "node", "rank"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        return data

    def finding(self) -> Finding | None:
        if self.file is None or self.line is None:
            return None
        details: dict[str, Any] = {
            "op": self.op,
            "phase": self.phase,
            "nan": self.nan,
            "posinf": self.posinf,
            "neginf": self.neginf,
            "elements": self.elements,
            **self.details,
        }
        if self.module:
            details["module"] = self.module
        if self.node:
            details["node"] = self.node
        return Finding(
            "nonfinite", "error", f"{self.title}: {self.message}", self.file, self.line, self.step, self.rank, details
        )


# ---- state -------------------------------------------------------------------------------------------------------


@dataclass
class _Call:
    """One outermost module call this step: enough to replay it (inputs, RNG state, autocast) and the gradient that
    came back to its outputs."""

    module: Any
    rng: Any
    cuda_rng: list[Any] | None
    autocast: list[tuple[str, Any]]
    grad_enabled: bool
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    output_grads: dict[int, Any] = field(default_factory=dict)


@dataclass
class _Step:
    """The last ``optimizer.step()``: which, where it was called, and whether it started from finite gradients."""

    number: int
    optimizer: Any  # weak reference
    where: Any  # (file, line, id(frame), code) of the user's call, or None
    grads_finite: bool


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.depth = 0  # nesting of module calls (outside replays)
        self.in_step = 0  # inside optimizer.step()
        self.mode_on = False  # our outside-modules mode is on this thread's stack
        self.busy = False  # inside our own checking, replay or stop: hooks stand aside
        self.replay: _ReplayMode | None = None
        self.stack: list[Any] = []  # modules entered during a replay
        self.calls: list[_Call] = []
        self.open_calls: list[_Call] = []
        self.step_number = 0
        self.grads_finite = True
        self.last_step: _Step | None = None


_st = _ThreadState()
_lock = threading.RLock()
_enabled = False
_origin = "debugger"
_installed = False
_handles: list[Any] = []
_first_reported = False
_last: NonFiniteRecord | None = None
_pending: tuple[NonFiniteRecord, Any] | None = None  # a backward birth waiting for backward() to return
_mode: Any = None
_known_roots: list[Any] = []  # weak references to recent outermost modules (for parameter names)
_explained_inf: dict[int, tuple[int, int]] = {}  # module id -> (+Inf, -Inf) counts its output holds by design
_cuda_present = False
_tensor_type: Any = ()  # torch.Tensor once torch is imported (isinstance against () is always False)


def enabled() -> bool:
    return _enabled


def replaying() -> bool:
    """True while the sentinel re-runs a module to locate a NaN: other features' hooks should ignore that forward."""
    return _st.replay is not None


def last_nonfinite() -> NonFiniteRecord | None:
    """The most recent NaN/Inf birth the sentinel saw in this process (None before any)."""
    return _last


@never_raise(fallback=False)
def break_on_nonfinite(enable: bool = True) -> bool:
    """Arm (or disarm) the sentinel at run time; returns the new state. Arming also re-arms the "stop once" latch.

    Safe to call from any thread, e.g. debugpy's command thread through a DAP ``evaluate`` without a frame: hooks are
    installed now (if torch is imported) and the outside-modules mode joins the training thread at its next module
    call.
    """
    global _enabled, _first_reported
    if not isinstance(enable, bool):
        report_once("sentinel-toggle", f"tensorsight.break_on_nonfinite expects True or False, got {enable!r}")
        return _enabled
    with _lock:
        _enabled = enable
        if enable:
            _first_reported = False
    if enable:
        when_imported("torch", _install)
    state = "armed" if enable else "off"
    _say(f"break on NaN/Inf: {state}")
    return _enabled


def arm(origin: str = "debugger") -> None:
    """Read the launch option; stdlib only until the program imports torch."""
    global _origin, _enabled
    _origin = origin
    if origin == "debugger":  # keep pydevd out of our frames (stepping, call stacks) once it is fully up
        when_imported("torch", _hide_our_frames)
    raw = option("breakOnNonFinite", False)
    if not isinstance(raw, bool):
        report_once("sentinel-option", f"ignoring launch option breakOnNonFinite={raw!r}: expected true or false")
        return
    if raw:
        _enabled = True
        when_imported("torch", _install)


def _hide_our_frames(torch: types.ModuleType) -> None:
    pause.hide_agent_files()


def _say(message: str) -> None:
    try:
        sys.stderr.write(f"[tensorsight] {message}\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - stderr may be closed
        pass


# ---- installation ---------------------------------------------------------------------------------------------------


@never_raise()
def _install(torch: types.ModuleType) -> None:
    global _installed, _mode, _cuda_present, _tensor_type
    with _lock:
        if _installed:
            if threading.current_thread() is threading.main_thread():
                _sync_mode()
            return
        _installed = True
    from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    _cuda_present = bool(torch.cuda.is_available())
    _tensor_type = torch.Tensor
    _mode = _make_outside_mode(torch)
    _handles.append(register_module_forward_pre_hook(_before_module))
    _handles.append(register_module_forward_hook(_after_module, with_kwargs=True, always_call=True))
    _handles.append(register_optimizer_step_pre_hook(_before_step))
    _handles.append(register_optimizer_step_post_hook(_after_step))
    steps.arm()
    if _origin == "debugger":
        pause.hide_agent_files()
    if threading.current_thread() is threading.main_thread():
        _sync_mode()  # other threads (debugpy's, for a toggle) get the mode at their next module call instead


def _uninstall() -> None:
    """Remove the hooks (called from the training thread once disarmed and the mode is off)."""
    global _installed
    with _lock:
        for handle in _handles:
            handle.remove()
        _handles.clear()
        _installed = False


def _sync_mode() -> None:
    """Put our outside-modules mode on this thread's stack exactly when it should be there: armed, no module forward,
    no optimizer step, no replay.

    Our mode always sits at the bottom of the stack: other modes (the program's ``with torch.device(...)``, a
    profiler, the shape observers) keep their order and stay above it, so their ``__exit__``, which pops the top of
    the stack, still pops their own mode.
    """
    st = _st
    torch = sys.modules.get("torch")
    if torch is None or _mode is None or st.busy:
        return
    want = _enabled and st.depth == 0 and st.in_step == 0 and st.replay is None
    if want and not st.mode_on:
        _rebuild_stack(torch, with_ours=True)
        st.mode_on = True
    elif not want and st.mode_on:
        _rebuild_stack(torch, with_ours=False)
        st.mode_on = False


def _rebuild_stack(torch: types.ModuleType, with_ours: bool) -> None:
    size = torch._C._len_torch_function_stack()
    if with_ours and size == 0:  # the usual cases: nothing else on the stack, or ours on top
        torch._C._push_on_torch_function_stack(_mode)
        return
    if not with_ours and size and torch._C._get_function_stack_at(size - 1) is _mode:
        torch._C._pop_torch_function_stack()
        return
    from torch.overrides import _pop_mode, _push_mode

    others = []
    while torch._C._len_torch_function_stack():
        mode = _pop_mode()
        if mode is not _mode:
            others.append(mode)
    if with_ours:
        _push_mode(_mode)
    for mode in reversed(others):
        _push_mode(mode)


# ---- module hooks ---------------------------------------------------------------------------------------------------


def _before_module(module: Any, args: Any) -> None:
    st = _st
    if st.busy:
        return
    if st.replay is not None:
        st.stack.append(module)
        return
    try:
        st.depth += 1
        if st.depth == 1:
            _sync_mode()
            if _enabled:
                _flush_pending()
                st.open_calls.append(_begin_call(module))
    except Exception as exc:  # noqa: BLE001
        report_once("sentinel-before-module", f"NaN sentinel: module hook failed: {type(exc).__name__}: {exc}")


def _after_module(module: Any, args: Any, *rest: Any) -> None:
    st = _st
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
            if _enabled and not _first_reported and call is not None and call.module is module and output is not None:
                call.args, call.kwargs = tuple(args), dict(kwargs or {})
                _check_outermost_output(module, call, output)
            if not _enabled and not st.mode_on:
                _uninstall()
            _sync_mode()
    except Exception as exc:  # noqa: BLE001
        report_once("sentinel-after-module", f"NaN sentinel: module hook failed: {type(exc).__name__}: {exc}")
        st.busy = False
        _sync_mode()


def _begin_call(module: Any) -> _Call:
    torch = sys.modules["torch"]
    cuda_rng = None
    if _cuda_present and torch.cuda.is_initialized():
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
    return _Call(module, torch.get_rng_state(), cuda_rng, autocast, torch.is_grad_enabled())


def _check_outermost_output(module: Any, call: _Call, output: Any) -> None:
    outputs = _tensors_in(output)
    bad = _fast_suspects(outputs)
    if not bad:
        _remember_call(call, outputs)
        return
    st = _st
    st.busy = True
    try:
        counts = exact_counts([outputs[i] for i in bad])
        if not counts or _silenced():
            _remember_call(call, outputs)
            return
        frame = _user_frame()
        inputs = _tensors_in((call.args, call.kwargs))
        incoming = exact_counts(inputs)
        name = _display_module(module)
        if _inherited(counts, incoming):
            _report(
                _record(
                    "data",
                    "(model input)",
                    counts,
                    frame,
                    module=name,
                    what=f"the input of {name} already holds {_counts_text(incoming)}: it came from outside what "
                    "TensorSight watches (data loading in another process, a loaded tensor)",
                    inputs=tuple(inputs),
                    output=output,
                    title=_title(incoming, born=False),
                ),
                frame,
            )
            return
        params = _state_tensors(module)
        if exact_counts([params[i] for i in suspects(params)]):
            if _optimizer_birth(module, counts, output):
                return
            _report(
                _record(
                    "forward",
                    "(parameters)",
                    counts,
                    frame,
                    module=name,
                    what=f"the parameters or buffers of {name} already hold NaN/Inf, so its output does",
                    output=output,
                    title=_title(counts, born=False),
                ),
                frame,
            )
            return
        if not counts.nan and _explained_inf.get(id(module)) == (counts.posinf, counts.neginf):
            return  # the same deliberate Inf as before (a mask): no replay every step
        replay = _replay_forward(call, stop_at=None)
        if replay is not None and replay.found is None and replay.reproduced and not counts.nan:
            # the replay gave the same Inf and no op made it from finite inputs: it was written in (a -inf mask)
            _explained_inf[id(module)] = (counts.posinf, counts.neginf)
            return
        if replay is None or (replay.found is None and not replay.reproduced):
            _report(
                _record(
                    "forward",
                    "(not reproduced)",
                    counts,
                    frame,
                    module=name,
                    what=f"the output of {name} became non-finite, but a re-run of its forward did not reproduce it "
                    "(nondeterministic ops, or side effects in forward)",
                    inputs=tuple(inputs),
                    output=output,
                    title=_title(counts, born=True),
                ),
                frame,
            )
    finally:
        st.busy = False


def _remember_call(call: _Call, outputs: list[Any]) -> None:
    """Keep the call for a backward replay, and catch the gradient that comes back to each output."""
    if not call.grad_enabled:
        return
    tracked = [t for t in outputs if t.requires_grad]
    if not tracked:
        return
    st = _st
    st.calls.append(call)
    if len(st.calls) > MAX_SAVED_CALLS:
        del st.calls[0]
    for index, tensor in enumerate(tracked):
        node = tensor.grad_fn
        if node is not None:  # a pre-hook on the node that made the output: cheaper than Tensor.register_hook
            node.register_prehook(_grad_catcher(call, index, tensor.output_nr))
    _remember_root(call.module)


def _grad_catcher(call: _Call, index: int, slot: int) -> Callable[[Any], None]:
    def catch(grads: Any) -> None:
        grad = grads[slot] if slot < len(grads) else None
        if grad is not None and grad.numel() <= MAX_SAVED_GRAD_ELEMENTS:
            call.output_grads[index] = grad.detach()

    return catch


def _remember_root(module: Any) -> None:
    for ref in _known_roots:
        if ref() is module:
            return
    _known_roots.append(weakref.ref(module))
    del _known_roots[:-4]


# ---- optimizer hooks ------------------------------------------------------------------------------------------------


def _before_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    st = _st
    if st.busy:
        return
    try:
        st.in_step += 1
        _sync_mode()
        st.step_number = steps.current_step() + 1
        st.grads_finite = True
        if not _enabled:
            return
        _flush_pending()
        params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        grads = [p.grad for p in params]
        bad = _fast_suspects(grads)
        if not bad:
            return
        counts = exact_counts([grads[i] for i in bad])
        if not counts:
            return
        st.grads_finite = False
        if _silenced():
            return
        st.busy = True
        try:
            _locate_backward_birth(params, bad, counts)
        finally:
            st.busy = False
    except Exception as exc:  # noqa: BLE001
        st.busy = False
        report_once("sentinel-before-step", f"NaN sentinel: optimizer hook failed: {type(exc).__name__}: {exc}")


def _after_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    """Remember the step; its parameters are checked by the next forward (see ``_optimizer_birth``)."""
    st = _st
    if st.busy:
        return
    try:
        if _enabled:
            frame = _user_frame()
            where = (frame.f_code.co_filename, frame.f_lineno, id(frame), frame.f_code) if frame is not None else None
            st.last_step = _Step(st.step_number, weakref.ref(optimizer), where, st.grads_finite)
        st.calls.clear()
    except Exception as exc:  # noqa: BLE001
        report_once("sentinel-after-step", f"NaN sentinel: optimizer hook failed: {type(exc).__name__}: {exc}")
    finally:
        st.in_step = max(0, st.in_step - 1)
        _sync_mode()


def _optimizer_birth(module: Any, counts: NonFiniteCounts, output: Any) -> bool:
    """The outermost module's parameters hold NaN/Inf, and the last ``optimizer.step()`` started from finite
    gradients: that step made them. Checking parameters here, at the next forward, instead of after every step saves
    a pass over all weights per step; the stop still points at the ``optimizer.step()`` line."""
    last = _st.last_step
    optimizer = last.optimizer() if last is not None else None
    if last is None or optimizer is None or not last.grads_finite:
        return False
    names = {id(p): name for name, p in _unwrap(module).named_parameters()}
    params = [p for p in optimizer_parameters(optimizer) if id(p) in names]
    bad = [i for i in suspects(params) if exact_counts([params[i]])]
    if not bad:
        return False
    made = exact_counts([params[i] for i in bad])
    touched = [names[id(params[i])] for i in bad]
    shown = ", ".join(touched[:4]) + (f" and {len(touched) - 4} more" if len(touched) > 4 else "")
    kind = type(optimizer).__name__
    lr = _learning_rate(optimizer)
    frame = _user_frame()
    where = last.where
    file, line = (where[0], where[1]) if where is not None else (None, None)
    record = _record(
        "optimizer",
        f"{kind}.step()",
        made,
        frame,
        file=file,
        line=line,
        what=f"{kind}.step() made {_counts_text(made)} in {shown} from finite parameters and gradients"
        + (f" (lr={lr:g})" if lr is not None else ""),
        step=last.number,
        output=tuple(params[i] for i in bad),
        title=_title(made, born=True),
    )
    del counts, output
    _report_found_later(record, where, "the next forward")
    return True


def _learning_rate(optimizer: Any) -> float | None:
    try:
        value = optimizer.param_groups[0].get("lr")
        return float(value) if value is not None else None
    except (AttributeError, IndexError, TypeError, ValueError):
        return None


def _parameter_names() -> dict[int, str]:
    names: dict[int, str] = {}
    for ref in list(_known_roots):
        root = ref()
        if root is None:
            continue
        for name, param in _unwrap(root).named_parameters():
            names.setdefault(id(param), name)
    return names


# ---- the outside-modules mode ----------------------------------------------------------------------------------------

_SKIP, _CHECK, _INPLACE, _BACKWARD = 0, 1, 2, 3

_SKIP_NAMES = frozenset(
    "__get__ __set__ __delete__ size dim numel stride storage_offset is_contiguous data_ptr element_size nelement "
    "ndimension __len__ __bool__ __int__ __float__ __index__ __complex__ item tolist __repr__ __str__ __format__ "
    "__hash__ __reduce_ex__ __deepcopy__ __array__ numpy __getstate__ __setstate__ requires_grad_ retain_grad "
    "register_hook register_post_accumulate_grad_hook is_floating_point is_complex get_device __contains__ __iter__ "
    "view view_as reshape reshape_as flatten unflatten squeeze unsqueeze transpose t permute expand expand_as narrow "
    "select unbind split split_with_sizes chunk movedim moveaxis swapaxes swapdims __getitem__ detach detach_ "
    "as_strided diagonal empty empty_like empty_strided new_empty __eq__ __ne__ __lt__ __le__ __gt__ __ge__ eq ne lt "
    "le gt ge isnan isinf isfinite isposinf isneginf nan_to_num nan_to_num_ __invert__ logical_not logical_and "
    "logical_or any all argmax argmin sort argsort topk zero_ fill_diagonal_ cpu share_memory_ pin_memory "
    "is_pinned is_shared untyped_storage _typed_storage storage backward_hook __instancecheck__ __subclasscheck__ "
    "_is_view _base _set_grad_enabled".split()
)
# Ops that can never be the first producer, forward or backward: from finite inputs they give finite outputs and
# finite gradients (selections, masks, bounded activations). Outside modules they pass through unchecked.
_ALWAYS_FINITE = frozenset(
    "neg __neg__ abs gather index_select take take_along_dim cat concat concatenate stack hstack vstack clone "
    "contiguous relu relu_ relu6 hardtanh leaky_relu where max min amax amin maximum minimum clamp clip sort topk "
    "masked_select masked_fill masked_fill_ flip roll repeat tile pad one_hot sigmoid tanh softmax log_softmax gelu "
    "silu hardswish hardsigmoid dropout sign floor ceil round trunc".split()
)
# Ops whose backward cannot turn finite gradients into NaN/Inf, though their forward can overflow: checked forward,
# not watched backward. Everything else (log, sqrt, div, pow, exp, norms, matmul, losses...) is watched both ways.
_GRADIENT_SAFE = frozenset(
    "add __add__ __radd__ __iadd__ add_ sub __sub__ __rsub__ __isub__ sub_ sum mean float double mse_loss l1_loss "
    "smooth_l1_loss huber_loss".split()
)
_BACKWARD_FUNCS: set[Any] = set()
_INPLACE_DUNDERS = frozenset(
    "__iadd__ __isub__ __imul__ __itruediv__ __ifloordiv__ __imod__ __ipow__ __imatmul__ __setitem__".split()
)
_policies: dict[Any, int] = {}

_OPERATORS = {
    "__add__": "+",
    "__radd__": "+",
    "__iadd__": "+=",
    "__sub__": "-",
    "__rsub__": "-",
    "__isub__": "-=",
    "__mul__": "*",
    "__rmul__": "*",
    "__imul__": "*=",
    "__truediv__": "/",
    "__rtruediv__": "/",
    "__itruediv__": "/=",
    "__div__": "/",
    "__rdiv__": "/",
    "__pow__": "**",
    "__rpow__": "**",
    "__ipow__": "**=",
    "__matmul__": "@",
    "__rmatmul__": "@",
    "__neg__": "unary -",
    "__setitem__": "[...] =",
}


def _policy(func: Any) -> int:
    policy = _policies.get(func)
    if policy is not None:
        return policy
    name = getattr(func, "__name__", "") or ""
    if func in _BACKWARD_FUNCS:
        policy = _BACKWARD
    elif name in _SKIP_NAMES or name in _ALWAYS_FINITE:
        policy = _SKIP
    elif name in _INPLACE_DUNDERS or (name.endswith("_") and not name.startswith("_")):
        policy = _INPLACE
    else:
        policy = _CHECK
    try:
        _policies[func] = policy
    except TypeError:  # unhashable callable
        pass
    return policy


_op_names: dict[Any, str] = {}


def op_name(func: Any) -> str:
    """How a user reads the op: ``torch.log``, ``Tensor.add_``, ``F.linear``, or the operator itself (``/``)."""
    try:
        return _op_names[func]
    except (KeyError, TypeError):
        pass
    name = _name_op(func)
    try:
        _op_names[func] = name
    except TypeError:
        pass
    return name


def _name_op(func: Any) -> str:
    name = getattr(func, "__name__", None) or repr(func)
    if name in _OPERATORS:
        return _OPERATORS[name]
    torch = sys.modules.get("torch")
    functional = getattr(getattr(torch, "nn", None), "functional", None)
    if functional is not None and getattr(functional, name, None) is func:
        return f"F.{name}"
    if torch is not None and getattr(torch, name, None) is func:
        return f"torch.{name}"
    qualname = getattr(func, "__qualname__", "") or ""
    if qualname.startswith(("TensorBase.", "Tensor.", "_TensorBase.")):
        return f"Tensor.{name}"
    module = getattr(func, "__module__", None)
    return f"{module}.{name}" if module else name


def _make_outside_mode(torch: types.ModuleType) -> Any:
    from torch.overrides import TorchFunctionMode

    _BACKWARD_FUNCS.update({torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad})

    class _OutsideModulesMode(TorchFunctionMode):
        """On the stack only outside module forwards and optimizer steps: checks every op's output there."""

        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            policy = _policies.get(func)
            if policy is None:
                policy = _policy(func)
            if policy == _SKIP or not _enabled or _first_reported:
                return func(*args, **kwargs)
            st = _st
            if st.busy or st.depth or st.in_step or st.replay is not None:
                return func(*args, **kwargs)
            if policy == _BACKWARD:
                result = func(*args, **kwargs)
                _flush_pending()
                return result
            was_clean = None
            if policy == _INPLACE and args and is_tensor(args[0]):
                was_clean = not _fast_suspects([args[0]])
            result = func(*args, **kwargs)
            try:
                _after_outside_op(func, args, kwargs, result, was_clean)
            except Exception as exc:  # noqa: BLE001 - never break the user's op
                st.busy = False
                report_once("sentinel-op", f"NaN sentinel: check after {op_name(func)} failed: {exc!r}")
            return result

    return _OutsideModulesMode()


def _after_outside_op(func: Any, args: Any, kwargs: Any, result: Any, was_clean: bool | None) -> None:
    if was_clean is not None:
        outputs = [args[0]]
    elif isinstance(result, _tensor_type):
        outputs = [result]
    else:
        outputs = _tensors_in(result, shallow=True)
    if not outputs:
        return
    bad = _fast_suspects(outputs)
    if not bad:
        if getattr(func, "__name__", "") not in _GRADIENT_SAFE and not _mixed_precision():
            _watch_backward(func, outputs)
        return
    st = _st
    st.busy = True
    try:
        if was_clean is False:
            return  # an in-place op on a tensor that already held NaN/Inf
        counts = exact_counts([outputs[i] for i in bad])
        if not counts or _silenced():
            return
        verdict = _judge_inputs(args, kwargs, counts, skip_first=was_clean is not None)
        if verdict is None:
            return  # carried along from an input: not born here
        frame = _user_frame()
        phase, source = verdict
        what = f"{op_name(func)} made {_counts_text(counts)} (of {_elements(outputs)} values) from finite inputs"
        if phase == "data":
            what = (
                f"{op_name(func)} built a tensor with {_counts_text(counts)} (of {_elements(outputs)} values) from "
                f"{source}: the value came in with the data"
            )
        record = _record(
            phase,
            op_name(func),
            counts,
            frame,
            what=what,
            inputs=tuple(_tensors_in((args, kwargs), shallow=True)),
            output=result if was_clean is None else args[0],
            title=_title(counts, born=phase != "data"),
        )
        _report(record, frame)
    finally:
        st.busy = False


def _judge_inputs(args: Any, kwargs: Any, counts: NonFiniteCounts, skip_first: bool) -> tuple[str, str] | None:
    """("forward" | "data", where the data came from) when the output's NaN/Inf is born in this op, None when an
    input already carried it. Tensors and Python numbers are inputs; numpy arrays are outside data."""
    tensors: list[Any] = []
    scalars: list[Any] = []
    arrays: list[Any] = []
    flat = list(args)[1:] if skip_first else list(args)
    flat.extend(kwargs.values())
    _collect_inputs(flat, tensors, scalars, arrays, 0)
    bad = suspects(tensors)
    seen = exact_counts([tensors[i] for i in bad])
    scalar_counts = number_counts(scalars)
    carried = NonFiniteCounts(
        seen.nan + scalar_counts.nan, seen.posinf + scalar_counts.posinf, seen.neginf + scalar_counts.neginf
    )
    if not _born(counts, carried):
        return None
    if arrays and exact_counts(arrays):
        return "data", _describe_sources(arrays)
    if not tensors and arrays:
        return "data", _describe_sources(arrays)
    return "forward", ""


def _collect_inputs(values: Any, tensors: list[Any], scalars: list[Any], arrays: list[Any], depth: int) -> None:
    for value in values:
        if is_tensor(value):
            tensors.append(value)
        elif is_array(value):
            arrays.append(value)
        elif isinstance(value, (int, float, complex)) and not isinstance(value, bool):
            if len(scalars) < MAX_SCANNED_NUMBERS:
                scalars.append(value)
        elif isinstance(value, (list, tuple)) and depth < 3:
            _collect_inputs(value, tensors, scalars, arrays, depth + 1)
        elif isinstance(value, dict) and depth < 3:
            _collect_inputs(list(value.values()), tensors, scalars, arrays, depth + 1)
        elif type(value).__module__ == "numpy" and hasattr(value, "dtype"):  # numpy scalar
            if len(scalars) < MAX_SCANNED_NUMBERS:
                scalars.append(complex(value) if value.dtype.kind == "c" else float(value))


def _describe_sources(arrays: list[Any]) -> str:
    first = arrays[0]
    return f"a numpy array {list(first.shape)} {first.dtype}"


def _born(out: NonFiniteCounts, carried: NonFiniteCounts) -> bool:
    """A NaN is born when no input carried a NaN; an Inf when no input carried any NaN/Inf."""
    if out.nan and not carried.nan:
        return True
    return bool(out.posinf + out.neginf) and not carried


def _inherited(out: NonFiniteCounts, incoming: NonFiniteCounts) -> bool:
    """The outermost module's NaN came in through its inputs (a NaN in, or Inf in and only Inf out)."""
    if out.nan:
        return bool(incoming.nan)
    return bool(incoming)


# ---- backward outside modules ----------------------------------------------------------------------------------------


def _watch_backward(func: Any, outputs: list[Any]) -> None:
    """Hook the autograd node of an op outside modules, so a gradient born there is reported with the op's line."""
    where = None
    for tensor in outputs:
        node = tensor.grad_fn if tensor.requires_grad else None
        if node is None:
            continue
        if where is None:
            frame = _user_frame()
            where = (frame.f_code.co_filename, frame.f_lineno, id(frame), frame.f_code) if frame is not None else ()
        node.register_hook(_node_watcher(func, where or None, type(node).__name__))
        if len(outputs) == 1:
            return


def _node_watcher(func: Any, where: Any, node_name: str) -> Callable[[Any, Any], None]:
    def watch(produced: Any, incoming: Any) -> None:
        op = op_name(func)
        global _pending
        if not _enabled or _silenced() or _pending is not None:
            return
        produced_tensors = [g for g in produced if is_tensor(g)]
        bad = _fast_suspects(produced_tensors)
        if not bad:
            return
        counts = exact_counts([produced_tensors[i] for i in bad])
        incoming_tensors = [g for g in incoming if is_tensor(g)]
        carried = exact_counts(incoming_tensors)
        if not counts or not _born(counts, carried):
            return
        file, line = (where[0], where[1]) if where else (None, None)
        record = _record(
            "backward",
            op,
            counts,
            None,
            file=file,
            line=line,
            node=node_name,
            what=f"the backward of {op} ({node_name}) made {_counts_text(counts)} (of {_elements(produced_tensors)} "
            "values) from finite gradients",
            incoming=tuple(incoming_tensors),
            produced=tuple(produced_tensors),
            title=_title(counts, born=True),
        )
        with _lock:
            if _pending is None:
                _pending = (record, where)

    return watch


def _flush_pending() -> None:
    """Report a backward birth of an op outside modules once backward() has returned to the user's code."""
    global _pending
    if _pending is None:
        return
    with _lock:
        if _pending is None:
            return
        record, where = _pending
        _pending = None
    st = _st
    saved = st.busy
    st.busy = True
    try:
        _report_found_later(record, where, "backward() returned")
    finally:
        st.busy = saved


def _report_found_later(record: NonFiniteRecord, where: Any, when: str) -> None:
    """Report a birth noticed after its line ran (a backward node, an optimizer step). When the frame that ran that
    line is still on the stack (typically the training loop), the stop is shown on that line of that frame."""
    frame = _user_frame()
    line_shown = None
    if where is not None and frame is not None:
        walker: types.FrameType | None = frame
        while walker is not None:
            if id(walker) == where[2] and walker.f_code is where[3]:
                frame, line_shown = walker, where[1]
                break
            walker = walker.f_back
    if frame is not None:
        record.stopped_at = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
        if line_shown is None or line_shown != frame.f_lineno:
            record.message += f" (found when {when}, at {record.stopped_at})"
    _report(record, frame, line_shown=line_shown)


# ---- replays ---------------------------------------------------------------------------------------------------------


class _ReplayMode:
    """Op-by-op checks while a module's forward runs again: find (or stop at) the op that produced the NaN/Inf."""

    def __init__(self, names: dict[int, str], root: Any, stop_at: int | None, backward: NonFiniteRecord | None):
        self.names = names
        self.root = root
        self.stop_at = stop_at
        self.backward = backward
        self.index = 0
        self.found: NonFiniteRecord | None = None
        self.ops: list[tuple[int, str, Any, list[Any]]] = []  # (index, op, where, output grad_fns) for recording
        self.record_nodes = False
        self.reproduced = False

    def module_path(self) -> str:
        return _module_label(self.names, _st.stack[-1] if _st.stack else self.root)

    def handle(self, func: Any, args: Any, kwargs: Any) -> Any:
        policy = _policy(func)
        if policy in (_SKIP, _BACKWARD) or self.found is not None:
            return func(*args, **kwargs)
        index = self.index
        self.index += 1
        was_clean = None
        if policy == _INPLACE and args and is_tensor(args[0]) and self.stop_at is None:
            was_clean = not _fast_suspects([args[0]])
        result = func(*args, **kwargs)
        outputs = [args[0]] if policy == _INPLACE and args and is_tensor(args[0]) else _tensors_in(result, True)
        if self.record_nodes:
            nodes = [t.grad_fn for t in outputs if t.requires_grad and t.grad_fn is not None]
            frame = _user_frame()
            where = (frame.f_code.co_filename, frame.f_lineno) if frame is not None else (None, None)
            self.ops.append((index, op_name(func), (where, self.module_path()), nodes))
            return result
        if self.stop_at is not None:
            # the same op sequence as the recording pass; a different op here means the replay diverged: no stop
            if index == self.stop_at and self.backward is not None and op_name(func) == self.backward.op:
                self._stop_for_backward(func, args, kwargs, result)
            return result
        bad = _fast_suspects(outputs)
        if not bad or was_clean is False:
            return result
        counts = exact_counts([outputs[i] for i in bad])
        if not counts or _judge_inputs(args, kwargs, counts, skip_first=was_clean is not None) is None:
            return result
        frame = _user_frame()
        module = self.module_path()
        record = _record(
            "forward",
            op_name(func),
            counts,
            frame,
            module=module,
            what=f"{op_name(func)} made {_counts_text(counts)} (of {_elements(outputs)} values) from finite inputs "
            f"in {module}",
            inputs=tuple(_tensors_in((args, kwargs), shallow=True)),
            output=result,
            title=_title(counts, born=True),
            replayed=True,
        )
        self.found = record
        _report(record, frame)
        return result

    def _stop_for_backward(self, func: Any, args: Any, kwargs: Any, result: Any) -> None:
        record = self.backward
        assert record is not None
        frame = _user_frame()
        record.inputs = tuple(_tensors_in((args, kwargs), shallow=True))
        record.output = result
        self.found = record
        _report(record, frame)


def _make_replay_mode(torch: types.ModuleType, replay: _ReplayMode) -> Any:
    from torch.overrides import TorchFunctionMode

    class _ReplayCheckMode(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            return replay.handle(func, args, kwargs or {})

    return _ReplayCheckMode()


def _unwrap(module: Any) -> Any:
    """The module whose forward holds the user's code: DDP/DataParallel wrappers and torch.compile are peeled off
    (replaying a DDP forward would start collectives on one rank only)."""
    for _ in range(4):
        kind = type(module).__name__
        if kind in ("DistributedDataParallel", "DataParallel") and hasattr(module, "module"):
            module = module.module
        elif kind == "OptimizedModule" and hasattr(module, "_orig_mod"):
            module = module._orig_mod
        else:
            break
    return module


def _replayable(module: Any) -> bool:
    return "FullyShardedDataParallel" not in type(module).__name__ and not type(module).__name__.startswith("FSDP")


@contextlib.contextmanager
def _replay_context(call: _Call, replay: _ReplayMode) -> Iterator[Any]:
    """Same RNG draws (in a forked stream), same autocast, private buffers; our hooks only keep the module stack."""
    torch = sys.modules["torch"]
    st = _st
    devices = list(range(len(call.cuda_rng))) if call.cuda_rng else []
    saved_stack, saved_busy = st.stack, st.busy
    st.stack = []
    st.replay = replay
    st.busy = False
    try:
        with torch.random.fork_rng(devices=devices, enabled=True):
            torch.set_rng_state(call.rng)
            if call.cuda_rng:
                torch.cuda.set_rng_state_all(call.cuda_rng)
            with contextlib.ExitStack() as stack:
                for device, dtype in call.autocast:
                    stack.enter_context(torch.autocast(device, dtype=dtype))
                stack.enter_context(_make_replay_mode(torch, replay))
                yield
    finally:
        st.replay = None
        st.stack = saved_stack
        st.busy = saved_busy


def _replay_inputs(call: _Call, requires_grad: bool) -> tuple[tuple[Any, ...], dict[str, Any], list[Any]]:
    """The call's inputs, detached (the original graph is never touched); float inputs that required grad become
    leaves that require grad, so a backward replay can stop there."""
    leaves: list[Any] = []

    def convert(value: Any) -> Any:
        if is_tensor(value):
            if requires_grad and value.requires_grad and (value.is_floating_point() or value.is_complex()):
                leaf = value.detach().requires_grad_(True)
                leaves.append(leaf)
                return leaf
            return value.detach() if value.requires_grad else value
        if isinstance(value, tuple):
            return tuple(convert(v) for v in value)
        if isinstance(value, list):
            return [convert(v) for v in value]
        if isinstance(value, dict):
            return {k: convert(v) for k, v in value.items()}
        return value

    args = tuple(convert(a) for a in call.args)
    kwargs = {k: convert(v) for k, v in call.kwargs.items()}
    return args, kwargs, leaves


def _private_buffers(target: Any) -> dict[str, Any]:
    """Copies of the module's buffers, so a replayed BatchNorm updates its own running statistics, not the user's."""
    torch = sys.modules["torch"]
    with torch.no_grad():
        return {name: b.clone() for name, b in target.named_buffers()}


def _run_replayed(target: Any, buffers: dict[str, Any], args: Any, kwargs: Any) -> Any:
    torch = sys.modules["torch"]
    return torch.func.functional_call(target, buffers, args, kwargs, strict=False)


def _replay_forward(call: _Call, stop_at: int | None, backward: NonFiniteRecord | None = None) -> _ReplayMode | None:
    """Re-run the call op by op; the replay knows the birth it found (and stopped at) and whether its output was
    non-finite again. None when the module cannot be replayed."""
    target = _unwrap(call.module)
    if not _replayable(target):
        return None
    replay = _ReplayMode(_module_names(target), target, stop_at, backward)
    args, kwargs, _ = _replay_inputs(call, requires_grad=backward is not None)
    buffers = _private_buffers(target)
    with _replay_context(call, replay):
        output = _run_replayed(target, buffers, args, kwargs)
    outputs = _tensors_in(output)
    replay.reproduced = bool(exact_counts([outputs[i] for i in _fast_suspects(outputs)]))
    return replay


def _locate_backward_birth(params: list[Any], bad: list[int], counts: NonFiniteCounts) -> None:
    """Gradients are non-finite before ``optimizer.step()`` and nothing was reported: replay the step's module calls
    with a hook on every autograd node to find the op whose backward made them."""
    for call in reversed(list(_st.calls)):
        found = _replay_backward(call)
        if found is not None:
            return
    names = _parameter_names()
    frame = _user_frame()
    touched = [names[id(params[i])] for i in bad if id(params[i]) in names]
    shown = ", ".join(touched[:4]) + (f" and {len(touched) - 4} more" if len(touched) > 4 else "")
    what = f"the gradients of {shown or 'some parameters'} hold {_counts_text(counts)} after backward"
    if identity.rank() is not None:
        # this rank's own backward made none of it: DDP's gradient all-reduce brought it from another rank
        what += ", but a replay of this rank's backward makes none: they came from another rank (gradient all-reduce)"
        title = _title(counts, born=False)
    else:
        what += "; a replay of this step's modules did not locate the op"
        title = _title(counts, born=True)
    _report(_record("backward", "(backward)", counts, frame, what=what, title=title, step=_st.step_number), frame)


def _replay_backward(call: _Call) -> NonFiniteRecord | None:
    torch = sys.modules["torch"]
    target = _unwrap(call.module)
    if not _replayable(target) or not call.grad_enabled:
        return None
    names = _module_names(target)
    recorder = _ReplayMode(names, target, None, None)
    recorder.record_nodes = True
    args, kwargs, leaves = _replay_inputs(call, requires_grad=True)
    buffers = _private_buffers(target)
    birth: list[tuple[int, str, NonFiniteCounts, list[Any], list[Any]]] = []
    with torch.enable_grad(), _replay_context(call, recorder):
        output = _run_replayed(target, buffers, args, kwargs)
    outputs = [t for t in _tensors_in(output) if t.requires_grad]
    if not outputs:
        return None
    node_op: dict[Any, int] = {}
    for index, _, _, nodes in recorder.ops:
        for node in nodes:
            node_op.setdefault(node, index)
    for index, _, _, nodes in recorder.ops:  # nodes made inside a composite op belong to it
        pending = [next_node for node in nodes for next_node, _ in node.next_functions if next_node is not None]
        while pending:
            node = pending.pop()
            if node in node_op or type(node).__name__ == "AccumulateGrad":
                continue
            node_op[node] = index
            pending.extend(n for n, _ in node.next_functions if n is not None)

    def watcher(index: int, node: Any) -> Callable[[Any, Any], None]:
        def watch(produced: Any, incoming: Any) -> None:
            if birth:
                return
            produced_tensors = [g for g in produced if is_tensor(g)]
            bad = _fast_suspects(produced_tensors)
            if not bad:
                return
            counts = exact_counts([produced_tensors[i] for i in bad])
            incoming_tensors = [g for g in incoming if is_tensor(g)]
            if counts and _born(counts, exact_counts(incoming_tensors)):
                birth.append((index, node.name(), counts, incoming_tensors, produced_tensors))

        return watch

    handles = [node.register_hook(watcher(index, node)) for node, index in node_op.items()]
    grad_outputs = [call.output_grads.get(i) for i in range(len(outputs))]
    grad_outputs = [
        g if g is not None and g.shape == o.shape else torch.ones_like(o)
        for g, o in zip(grad_outputs, outputs, strict=True)
    ]
    inputs = [p for p in target.parameters() if p.requires_grad] + leaves
    if not inputs:
        return None
    try:
        torch.autograd.grad(outputs, inputs, grad_outputs, allow_unused=True)
    finally:
        for handle in handles:
            handle.remove()
    if not birth:
        return None
    index, node_name, counts, incoming, produced = birth[0]
    op, (where, module) = next((op, info) for i, op, info, _ in recorder.ops if i == index)
    approx = "" if call.output_grads else " (replayed from a gradient of ones: the real one was too large to keep)"
    record = _record(
        "backward",
        op,
        counts,
        None,
        file=where[0],
        line=where[1],
        module=module,
        node=node_name,
        what=f"the backward of {op} ({node_name}) made {_counts_text(counts)} (of {_elements(produced)} values) from "
        f"finite gradients in {module}{approx}",
        incoming=tuple(incoming),
        produced=tuple(produced),
        title=_title(counts, born=True),
        step=_st.step_number,
        replayed=True,
    )
    with torch.enable_grad():
        replay = _replay_forward(call, stop_at=index, backward=record)
    if replay is None or replay.found is None:  # the second replay did not reach the op: report without its frame
        frame = _user_frame()
        _report(record, frame)
    return record


# ---- reporting -------------------------------------------------------------------------------------------------------


def _silenced() -> bool:
    """After the first birth of this arming the sentinel goes quiet: everything downstream is NaN anyway, and
    ``break_on_nonfinite(True)`` re-arms it."""
    return _first_reported


def _record(
    phase: str,
    op: str,
    counts: NonFiniteCounts,
    frame: types.FrameType | None,
    *,
    what: str,
    title: str,
    module: str | None = None,
    node: str | None = None,
    file: str | None = None,
    line: int | None = None,
    inputs: tuple[Any, ...] = (),
    output: Any = None,
    incoming: tuple[Any, ...] = (),
    produced: tuple[Any, ...] = (),
    step: int | None = None,
    replayed: bool = False,
) -> NonFiniteRecord:
    if file is None and frame is not None:
        file, line = os.path.abspath(frame.f_code.co_filename), frame.f_lineno
    elif file is not None:
        file = os.path.abspath(file)
    step_number = step if step is not None else steps.current_step() + 1
    rank = identity.rank()
    where = f"{os.path.basename(file)}:{line}" if file else "unknown location"
    context = [phase, f"step {step_number}"]
    if rank is not None:
        context.append(f"rank {rank}")
    message = f"{what} — {', '.join(context)}, at {where}"
    details: dict[str, Any] = {"replayed": True} if replayed else {}
    elements = _elements([output] if is_tensor(output) else list(produced))
    return NonFiniteRecord(
        phase=phase,
        op=op,
        title=title,
        message=message,
        file=file,
        line=line,
        step=step_number,
        rank=rank,
        nan=counts.nan,
        posinf=counts.posinf,
        neginf=counts.neginf,
        elements=elements,
        module=module,
        node=node,
        inputs=inputs,
        output=output,
        incoming_grads=incoming,
        produced_grads=produced,
        details=details,
    )


def _report(record: NonFiniteRecord, frame: types.FrameType | None, line_shown: int | None = None) -> None:
    """Publish a birth (event, finding, Debug Console line) and, the first time, stop the debugger at ``frame``."""
    global _first_reported, _last
    with _lock:
        if _first_reported:
            return
        _first_reported = True
    _last = record
    events.emit("nonfinite", **record.event())
    finding = record.finding()
    if finding is not None:
        events.emit_finding(finding)
    _say(f"{record.title}: {record.message}")
    if _origin != "debugger" or frame is None or not _stops_allowed() or pause.thread_held_by_debugger():
        return
    pause.stop_in_frame(frame, record.title, record.message, {"(nonfinite)": record}, line=line_shown)


def _stops_allowed() -> bool:
    try:
        from tensorsight.agent.distributed.ranks import stops_allowed
    except ImportError:
        return True
    try:
        return bool(stops_allowed())
    except Exception:  # noqa: BLE001
        return True


def _title(counts: NonFiniteCounts, born: bool) -> str:
    """The stop's headline (the editor's exception title): where the value was born, or where it came in."""
    what = "NaN" if counts.nan else "Inf"
    return f"{what} born here" if born else f"{what} came in here"


def _counts_text(counts: NonFiniteCounts) -> str:
    parts = []
    if counts.nan:
        parts.append(f"{counts.nan} NaN")
    if counts.posinf:
        parts.append(f"{counts.posinf} +Inf")
    if counts.neginf:
        parts.append(f"{counts.neginf} -Inf")
    return ", ".join(parts) or "no NaN/Inf"


# ---- small helpers ---------------------------------------------------------------------------------------------------


_user_codes: dict[Any, bool] = {}


def _user_frame() -> types.FrameType | None:
    """The innermost frame of the user's code on this thread (the line that called the op); cached per code object,
    since it runs for every op outside modules."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        verdict = _user_codes.get(code)
        if verdict is None:
            verdict = is_user_file(code.co_filename)
            if len(_user_codes) < 100_000:
                _user_codes[code] = verdict
        if verdict:
            return frame
        frame = frame.f_back
    return None


def _tensors_in(value: Any, shallow: bool = False, depth: int = 0) -> list[Any]:
    """Tensors in an op's or a module's output: a tensor, or tensors in tuples/lists/dicts (model outputs)."""
    if is_tensor(value):
        return [value]
    if depth > (1 if shallow else 4):
        return []
    found: list[Any] = []
    if isinstance(value, dict):
        items: Any = value.values()
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        return found
    for item in items:
        found.extend(_tensors_in(item, shallow, depth + 1))
    return found


def _mixed_precision() -> bool:
    """Under autocast, Inf gradients are expected now and then: AMP's GradScaler skips those steps (then no
    ``optimizer.step()`` runs, so the gradient check before it stays quiet too)."""
    probe = getattr(sys.modules["torch"]._C, "_is_any_autocast_enabled", None)
    return bool(probe()) if probe is not None else False


def _fast_suspects(tensors: list[Any]) -> list[int]:
    """Indices of tensors that may hold NaN/Inf (``tensor_walk.suspects`` reduces detached views: no autograd)."""
    return suspects(tensors) if tensors else []


def _elements(tensors: list[Any]) -> int:
    return int(sum(t.numel() for t in tensors if is_tensor(t)))


def _state_tensors(module: Any) -> list[Any]:
    return [*module.parameters(), *module.buffers()]


def _module_names(root: Any) -> dict[int, str]:
    return {id(m): name for name, m in root.named_modules()}


def _module_label(names: dict[int, str], module: Any) -> str:
    path = names.get(id(module), "")
    kind = type(module).__name__
    return f"{path} ({kind})" if path else kind


def _display_module(module: Any) -> str:
    return type(_unwrap(module)).__name__
