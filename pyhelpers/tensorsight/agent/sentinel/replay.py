"""The replay, the way JAX's ``debug_nans`` re-runs de-optimised: when a boundary check finds a NaN/Inf in the output
of an outermost module call, its forward runs again op by op under a checking mode, to find (and stop at) the first
op whose output is born non-finite, in the replayed user frame, at that line.

The replay changes nothing the program can observe: it runs on a private copy of the module and its inputs with the
RNG state the call had, in a forked stream (dropout draws the same masks; the program's stream is untouched), and
only when ``containment`` vouches that the forward reaches no state outside the copy; otherwise it does not run and
the caller reports at the module with the reason. Its frames are the user's code running on the copy (``self`` is
the copy, with the values the module had).

Called by ``boundaries`` (a forward birth) and ``backward`` (a gradient born inside a module).
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator
from typing import Any

from tensorsight.agent.runtime.op_calls import caller_frame
from tensorsight.agent.runtime.tensor_walk import exact_counts, is_tensor
from tensorsight.agent.runtime.untraced_hooks import traced_call
from tensorsight.agent.runtime.user_code import is_agent_file
from tensorsight.agent.sentinel.containment import private_copy, unsafe_reason
from tensorsight.agent.sentinel.ops import BACKWARD, INPLACE, SKIP, judge_inputs, op_name, policy_of
from tensorsight.agent.sentinel.reading import (
    elements,
    fast_suspects,
    module_label,
    module_names,
    tensors_in,
    unwrap,
    user_frame,
)
from tensorsight.agent.sentinel.records import NonFiniteRecord, made_text, make_record, report, title_of
from tensorsight.agent.sentinel.state import Call, st
from tensorsight.core.l10n import t


def replaying() -> bool:
    """True while the sentinel re-runs a module to locate a NaN: other features' hooks should ignore that forward."""
    return st.replay is not None


class ReplayMode:
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
        self.hidden: int | None = None  # recording: the first op born non-finite in forward (masked before the output)
        self.note = ""  # added to the birth's report
        self.phase = "forward"  # what the replayed code is: a forward, or a custom Function's backward

    def module_path(self) -> str | None:
        if not st.stack and self.root is None:
            return None  # a function's replay (``call_replay``), outside any module
        return module_label(self.names, st.stack[-1] if st.stack else self.root)

    def handle(self, func: Any, args: Any, kwargs: Any) -> Any:
        policy = policy_of(func)
        if policy in (SKIP, BACKWARD) or self.found is not None:
            return func(*args, **kwargs)
        index = self.index
        self.index += 1
        was_clean = None
        if policy == INPLACE and args and is_tensor(args[0]) and self.stop_at is None:
            was_clean = not fast_suspects([args[0]])
        result = func(*args, **kwargs)
        outputs = [args[0]] if policy == INPLACE and args and is_tensor(args[0]) else tensors_in(result, True)
        if self.record_nodes:
            nodes = [t.grad_fn for t in outputs if t.requires_grad and t.grad_fn is not None]
            frame = user_frame()
            where = (frame.f_code.co_filename, frame.f_lineno) if frame is not None else (None, None)
            self.ops.append((index, op_name(func), (where, self.module_path()), nodes))
            if (
                self.hidden is None
                and was_clean is not False
                and self._born_here(func, args, kwargs, outputs, was_clean)
            ):
                self.hidden = index
            return result
        if self.stop_at is not None:
            # the same op sequence as the recording pass; a different op here means the replay diverged: no stop
            if index == self.stop_at and self.backward is not None and op_name(func) == self.backward.op:
                self._stop_for_backward(func, args, kwargs, result)
            return result
        bad = fast_suspects(outputs)
        if not bad or was_clean is False:
            return result
        counts = exact_counts([outputs[i] for i in bad])
        birth = judge_inputs(args, kwargs, counts, skip_first=was_clean is not None) if counts else None
        if birth is None:
            return result
        frame = user_frame()
        module = self.module_path()
        record = make_record(
            self.phase,
            op_name(func),
            counts,
            frame,
            module=module,
            what=made_text(
                op_name(func),
                counts,
                elements(outputs),
                birth.carried,
                module,
            )
            + self.note,
            inputs=tuple(tensors_in((args, kwargs), shallow=True)),
            output=result,
            title=title_of(counts, born=True),
            replayed=True,
        )
        self.found = record  # before the stop: ops the user evaluates while stopped pass through
        report(record, frame)
        return result

    @staticmethod
    def _born_here(func: Any, args: Any, kwargs: Any, outputs: list[Any], was_clean: bool | None) -> bool:
        bad = fast_suspects(outputs)
        if not bad:
            return False
        counts = exact_counts([outputs[i] for i in bad])
        return bool(counts) and judge_inputs(args, kwargs, counts, skip_first=was_clean is not None) is not None

    def _stop_for_backward(self, func: Any, args: Any, kwargs: Any, result: Any) -> None:
        record = self.backward
        assert record is not None
        frame = user_frame()
        record.inputs = tuple(tensors_in((args, kwargs), shallow=True))
        record.output = result
        self.found = record
        report(record, frame)


def _make_replay_mode(torch: types.ModuleType, replay: ReplayMode) -> Any:
    from torch.overrides import TorchFunctionMode

    class _ReplayCheckMode(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if is_agent_file(caller_frame(func, sys._getframe(1)).f_code.co_filename):
                # our own reads during the replay (another feature's hook on the replica's first forward): not the
                # program's ops, and never counted, so both passes of a replay see the same op sequence
                return func(*args, **(kwargs or {}))
            return replay.handle(func, args, kwargs or {})

    return _ReplayCheckMode()


def not_replayable(module: Any, call: Call) -> str | None:
    """Why the module's forward is not replayed (None: it is)."""
    kind = type(module).__name__
    if "FullyShardedDataParallel" in kind or kind.startswith("FSDP"):
        return t("FSDP modules are not replayed (their forward gathers parameters across ranks)")
    return unsafe_reason(module, tensors_in((call.args, call.kwargs)))


class Replica:
    """The private copy a replay runs on: the module, its inputs, and the inputs that are leaves requiring grad (a
    backward replay differentiates with respect to them and to the copy's parameters)."""

    def __init__(self, call: Call, target: Any, requires_grad: bool) -> None:
        torch = sys.modules["torch"]
        with torch._C.DisableTorchFunction():  # our copy: no mode sees it, no subclass __torch_function__ runs
            self.module, self.args, self.kwargs = private_copy(target, tuple(call.args), dict(call.kwargs))
            self.leaves: list[Any] = []
            originals, copies = tensors_in((call.args, call.kwargs)), tensors_in((self.args, self.kwargs))
            for original, copied in zip(originals, copies, strict=False):
                floating = copied.is_floating_point() or copied.is_complex()
                if requires_grad and original.requires_grad and floating:
                    if not copied.requires_grad:
                        copied.requires_grad_(True)
                    if copied.is_leaf:
                        self.leaves.append(copied)
                elif copied.requires_grad and copied.is_leaf and not requires_grad:
                    copied.requires_grad_(False)

    def run(self) -> Any:
        return self.module(*self.args, **self.kwargs)


@contextlib.contextmanager
def replay_context(call: Call, replay: ReplayMode) -> Iterator[Any]:
    """Same RNG draws (in a forked stream), same autocast; our hooks only keep the module stack."""
    torch = sys.modules["torch"]
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


def replay_forward(
    call: Call, stop_at: int | None, backward: NonFiniteRecord | None = None, note: str = ""
) -> ReplayMode | str:
    """Re-run the call op by op on a private copy; the replay knows the birth it found (and stopped at) and whether
    its output was non-finite again. A string (the reason) when the module is not replayed. ``note`` is added to the
    report of a forward birth."""
    target = unwrap(call.module)
    reason = not_replayable(target, call)
    if reason is not None:
        return reason
    try:
        replica = Replica(call, target, requires_grad=backward is not None)
    except Exception as exc:  # noqa: BLE001 - an attribute that cannot be copied (a lock, a file, a generator)
        return t("its state cannot be copied privately ({0}: {1})", type(exc).__name__, exc)
    replay = ReplayMode(module_names(replica.module), replica.module, stop_at, backward)
    replay.note = note
    with replay_context(call, replay):
        output = traced_call(replica.run)  # the program's forward (on a copy): its breakpoints stop as before
    outputs = tensors_in(output)
    replay.reproduced = bool(exact_counts([outputs[i] for i in fast_suspects(outputs)]))
    return replay
