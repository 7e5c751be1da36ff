"""Gradients: where a NaN/Inf is born in backward.

- Ops outside modules (checked by ``outside``): a hook on the op's autograd node sees the gradient it makes; a birth
  there is reported when ``backward()`` returns to the user's code (``flush_pending``), on the op's forward line.
- Inside modules: before ``optimizer.step()`` the boundary check (``boundaries``) finds non-finite gradients nobody
  reported; ``locate_backward_birth`` replays the step's outermost module calls on private copies (``replay``), runs
  backward from the gradient that came back to each output with a hook on every autograd node, then replays forward
  once more to stop at the op whose backward produced it.
"""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Callable
from typing import Any

from tensorsight.agent.runtime import identity
from tensorsight.agent.runtime.op_calls import shielded
from tensorsight.agent.runtime.tensor_walk import exact_counts, is_tensor
from tensorsight.agent.runtime.untraced_hooks import untraced_hook
from tensorsight.agent.sentinel import sites
from tensorsight.agent.sentinel.budget import budget as outside_cost
from tensorsight.agent.sentinel.ops import born, op_name
from tensorsight.agent.sentinel.reading import (
    elements,
    fast_suspects,
    module_names,
    tensors_in,
    unwrap,
    user_frame,
)
from tensorsight.agent.sentinel.records import (
    NonFiniteRecord,
    counts_text,
    make_record,
    publish,
    publish_found_later,
    report,
    title_of,
)
from tensorsight.agent.sentinel.replay import ReplayMode, Replica, not_replayable, replay_context, replay_forward
from tensorsight.agent.sentinel.state import Call, lock, silenced, st, sw
from tensorsight.core.l10n import t
from tensorsight.core.nonfinite import NonFiniteCounts


def watch_backward(func: Any, outputs: list[Any]) -> None:
    """Hook the autograd node of an op outside modules, so a gradient born there is reported with the op's line; and
    learn the op's site (``sites``), so a forward birth of this line in a step that is not observed is named too."""
    where = None
    for tensor in outputs:
        try:
            node = tensor.grad_fn if tensor.requires_grad else None
        except RuntimeError:  # a no_grad view written in place: torch refuses to rebuild its grad_fn (no backward)
            continue
        if node is None:
            continue
        if where is None:
            frame = user_frame()
            where = (frame.f_code.co_filename, frame.f_lineno, id(frame), frame.f_code) if frame is not None else ()
            if frame is not None:
                sites.learn(func, op_name(func), node, frame)
        node.register_hook(_node_watcher(func, where or None, type(node).__name__))
        if len(outputs) == 1:
            return


def _node_watcher(func: Any, where: Any, node_name: str) -> Callable[[Any, Any], None]:
    @untraced_hook
    def watch(produced: Any, incoming: Any) -> None:
        started = time.perf_counter()
        try:
            _watch_node(func, where, node_name, produced, incoming)
        finally:
            outside_cost.spent(time.perf_counter() - started)

    return watch


def _watch_node(func: Any, where: Any, node_name: str, produced: Any, incoming: Any) -> None:
    if not sw.enabled or silenced() or sw.pending is not None:
        return
    produced_tensors = [g for g in produced if is_tensor(g)]
    incoming_tensors = [g for g in incoming if is_tensor(g)]
    with shielded(produced_tensors + incoming_tensors):
        bad = fast_suspects(produced_tensors)
        if not bad:
            return
        counts = exact_counts([produced_tensors[i] for i in bad])
        carried = exact_counts(incoming_tensors)
    if not counts or not born(counts, carried):
        return
    op = op_name(func)
    file, line = (where[0], where[1]) if where else (None, None)
    record = make_record(
        "backward",
        op,
        counts,
        None,
        file=file,
        line=line,
        node=node_name,
        what=backward_made_text(op, node_name, counts, elements(produced_tensors), carried),
        incoming=tuple(incoming_tensors),
        produced=tuple(produced_tensors),
        title=title_of(counts, born=True),
    )
    with lock:
        if sw.pending is None:
            sw.pending = (record, where)


def backward_made_text(
    op: str, node: str, made: NonFiniteCounts, values: int, carried: NonFiniteCounts, module: str | None = None
) -> str:
    """What a backward node made and from what: finite gradients, or gradients that already held Inf which the node
    turned into NaN (``inf * 0`` in a linear layer's backward, after a loss that was Inf)."""
    if carried:
        said = t(
            "the backward of {0} ({1}) made {2} (of {3} values) from gradients holding {4}",
            op,
            node,
            counts_text(made),
            values,
            counts_text(carried),
        )
        return said if module is None else t("{0} in {1}", said, module)
    if module is not None:
        return t(
            "the backward of {0} ({1}) made {2} (of {3} values) from finite gradients in {4}",
            op,
            node,
            counts_text(made),
            values,
            module,
        )
    return t(
        "the backward of {0} ({1}) made {2} (of {3} values) from finite gradients", op, node, counts_text(made), values
    )


def flush_pending() -> None:
    """Report a backward birth of an op outside modules once backward() has returned to the user's code."""
    if sw.pending is None:
        return
    with lock:
        if sw.pending is None:
            return
        record, where = sw.pending
        sw.pending = None
    saved = st.busy
    st.busy = True
    try:
        publish_found_later(record, where, t("backward() returned"))
    finally:
        st.busy = saved


def locate_backward_birth(params: list[Any], bad: list[int], counts: NonFiniteCounts, note: str = "") -> None:
    """Gradients are non-finite before ``optimizer.step()`` and nothing was reported: replay the step's module calls
    with a hook on every autograd node to find the op whose backward made them. ``note``: why ops outside modules
    may not have been checked this step (added to the report when no replay locates the op)."""
    reasons: list[str] = []
    for call in reversed(list(st.calls)):
        found = _replay_backward(call)
        if isinstance(found, str):
            reasons.append(t("{0} was not replayed: {1}", type(unwrap(call.module)).__name__, found))
        elif found is not None:
            return
    names = _parameter_names()
    frame = user_frame()
    touched = [names[id(params[i])] for i in bad if id(params[i]) in names]
    shown = ", ".join(touched[:4]) + (t(" and {0} more", len(touched) - 4) if len(touched) > 4 else "")
    what = t("the gradients of {0} hold {1} after backward", shown or t("some parameters"), counts_text(counts))
    if identity.rank() is not None:
        # this rank's own backward made none of it: DDP's gradient all-reduce brought it from another rank
        what += t(
            ", but a replay of this rank's backward makes none: they came from another rank (gradient all-reduce)"
        )
        title = title_of(counts, born=False)
    elif reasons:
        what += "; " + "; ".join(reasons)
        title = title_of(counts, born=True)
    else:
        what += t("; a replay of this step's modules did not locate the op") + note
        title = title_of(counts, born=True)
    publish("backward", "(backward)", counts, frame, what=what, title=title, step=st.step_number)


def _parameter_names() -> dict[int, str]:
    names: dict[int, str] = {}
    for ref in list(sw.known_roots):
        root = ref()
        if root is None:
            continue
        for name, param in unwrap(root).named_parameters():
            names.setdefault(id(param), name)
    return names


def _replay_backward(call: Call) -> NonFiniteRecord | str | None:
    """The birth found by replaying this call's forward and backward (None: none found; a string: the reason the
    module is not replayed)."""
    torch = sys.modules["torch"]
    target = unwrap(call.module)
    if not call.grad_enabled:
        return None
    reason = not_replayable(target, call)
    if reason is not None:
        return reason
    try:
        replica = Replica(call, target, requires_grad=True)
    except Exception as exc:  # noqa: BLE001 - an attribute that cannot be copied
        return t("its state cannot be copied privately ({0}: {1})", type(exc).__name__, exc)
    recorder = ReplayMode(module_names(replica.module), replica.module, None, None)
    recorder.record_nodes = True
    birth: list[tuple[int, str, NonFiniteCounts, list[Any], list[Any]]] = []
    birth_node: list[Any] = []
    with torch.enable_grad(), replay_context(call, recorder):
        output = replica.run()
    if recorder.hidden is not None:  # a NaN/Inf made in forward and masked before the output: its gradient shows it
        with torch.enable_grad():
            replay = replay_forward(
                call,
                stop_at=None,
                note=t("; later ops kept it out of the module's output, and it reached the gradients"),
            )
        if not isinstance(replay, str) and replay.found is not None:
            return replay.found
    outputs = [t for t in tensors_in(output) if t.requires_grad]
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
            bad = fast_suspects(produced_tensors)
            if not bad:
                return
            counts = exact_counts([produced_tensors[i] for i in bad])
            incoming_tensors = [g for g in incoming if is_tensor(g)]
            if counts and born(counts, exact_counts(incoming_tensors)):
                birth.append((index, node.name(), counts, incoming_tensors, produced_tensors))
                birth_node.append(node)

        return watch

    handles = [node.register_hook(watcher(index, node)) for node, index in node_op.items()]
    grad_outputs = [call.output_grads.get(i) for i in range(len(outputs))]
    grad_outputs = [
        g if g is not None and g.shape == o.shape else torch.ones_like(o)
        for g, o in zip(grad_outputs, outputs, strict=True)
    ]
    inputs = [p for p in replica.module.parameters() if p.requires_grad] + replica.leaves
    if not inputs:
        return None
    try:
        # the graph is kept (it is the replica's) so that a custom Function's backward can run again on its context
        torch.autograd.grad(outputs, inputs, grad_outputs, allow_unused=True, retain_graph=True)
    finally:
        for handle in handles:
            handle.remove()
    if not birth:
        return None
    index, node_name, counts, incoming, produced = birth[0]
    forward_cls = getattr(birth_node[0], "_forward_cls", None)
    if forward_cls is not None:  # the program's own backward made it: run it again, op by op, to stop on its line
        found = _replay_function_backward(call, birth_node[0], forward_cls, incoming)
        if found is not None:
            return found
    op, (where, module) = next((op, info) for i, op, info, _ in recorder.ops if i == index)
    approx = "" if call.output_grads else " (replayed from a gradient of ones: the real one was too large to keep)"
    record = make_record(
        "backward",
        op,
        counts,
        None,
        file=where[0],
        line=where[1],
        module=module,
        node=node_name,
        what=backward_made_text(op, node_name, counts, elements(produced), exact_counts(list(incoming)), module)
        + approx,
        incoming=tuple(incoming),
        produced=tuple(produced),
        title=title_of(counts, born=True),
        step=st.step_number,
        replayed=True,
    )
    with torch.enable_grad():
        replay = replay_forward(call, stop_at=index, backward=record)
    if isinstance(replay, str) or replay.found is None:  # the second replay did not reach the op: report here
        frame = user_frame()
        report(record, frame)
    return record


def _replay_function_backward(call: Call, node: Any, forward_cls: Any, incoming: list[Any]) -> NonFiniteRecord | None:
    """A custom ``torch.autograd.Function`` whose backward made the NaN/Inf: its ``backward`` runs again on the
    replica's node (the context that holds the saved tensors) and the gradients that came in, op by op, so the stop
    is on the line of the program's backward that made it. Only when the containment rule vouches for the class
    (``containment``); None when it is not replayed or made nothing."""
    from tensorsight.agent.runtime.untraced_hooks import traced_call
    from tensorsight.agent.sentinel.containment import function_unsafe_reason

    torch = sys.modules["torch"]
    backward = inspect.getattr_static(forward_cls, "backward", None)
    backward = getattr(backward, "__func__", backward)
    if not inspect.isfunction(backward) or function_unsafe_reason(backward, list(incoming)) is not None:
        return None
    replay = ReplayMode({}, None, None, None)
    replay.phase = "backward"
    replay.note = t(" in the backward of {0} (a custom autograd.Function)", forward_cls.__qualname__)
    with torch.no_grad(), replay_context(call, replay):
        traced_call(backward, node, *incoming)  # the program's backward (on the replica's context)
    return replay.found
