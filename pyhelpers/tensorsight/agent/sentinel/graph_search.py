"""Find the op that made a NaN/Inf from the autograd graph of the tensor that carries it, without running any of the
program's code: the exact, side-effect-free search behind a boundary check of a step the outside-modules mode did not
observe.

A training step's loss holds, in its autograd graph, every op that led to it since the step's inputs, and each node
keeps the tensors its backward needs: often the op's inputs (``_saved_self``, ``_saved_other``), sometimes its output
(``_saved_result``). When a boundary finds the loss non-finite (``backward()`` is about to run), the graph is still
whole. The search walks it from the loss down to the outputs of the step's outermost module calls (checked finite by
their own boundary, so nothing above them is searched), and works out each node's output where it can: the saved
result, or the op run again on its saved inputs (``log``, ``div``, ``pow``...; the table ``_OPS``), under
``no_grad`` on detached tensors, so nothing is recorded, written or drawn. In creation order (``_sequence_nr``), the
first node whose output holds NaN/Inf while its inputs did not is the birth. Its line comes from the sites the mode
learned in observed steps (``sites``).

Bounded: at most ``MAX_NODES`` nodes are walked. Called by ``boundaries`` (the ``backward()`` boundary).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tensorsight.agent.runtime.tensor_walk import exact_counts, is_tensor, number_counts
from tensorsight.agent.sentinel.ops import born
from tensorsight.core.nonfinite import NonFiniteCounts

MAX_NODES = 20_000

_NOT_KNOWN = object()


@dataclass
class GraphBirth:
    """The node whose output is the first NaN/Inf of the graph, with the values that show it."""

    node: Any
    made: NonFiniteCounts
    carried: NonFiniteCounts
    inputs: list[Any]
    output: Any
    exact: bool  # every input of the node was read (not only some of them)
    searched: int = 0  # nodes walked
    notes: list[str] = field(default_factory=list)


Rule = Callable[[Any, Callable[[int, str], Any]], "tuple[Any, list[Any]] | None"]  # (node, input reader) -> output


def _unary(name: str) -> Rule:
    def run(node: Any, value: Callable[[int, str], Any]) -> tuple[Any, list[Any]] | None:
        x = value(0, "_saved_self")
        if x is None:
            return None
        return getattr(sys.modules["torch"], name)(x), [x]

    return run


def _binary(name: str, other: str = "_saved_other") -> Rule:
    def run(node: Any, value: Callable[[int, str], Any]) -> tuple[Any, list[Any]] | None:
        x, y = value(0, "_saved_self"), value(1, other)
        if x is None or y is None:
            return None
        return getattr(sys.modules["torch"], name)(x, y), [x, y]

    return run


def _with_scalar(name: str, attribute: str) -> Rule:
    def run(node: Any, value: Callable[[int, str], Any]) -> tuple[Any, list[Any]] | None:
        x = value(0, "_saved_self")
        scalar = getattr(node, attribute, None)
        if x is None or not isinstance(scalar, (int, float, complex)):
            return None
        return getattr(sys.modules["torch"], name)(x, scalar), [x, scalar]

    return run


def _var(node: Any, value: Callable[[int, str], Any]) -> tuple[Any, list[Any]] | None:
    x = value(0, "_saved_self")
    if x is None:
        return None
    dim = getattr(node, "_saved_dim", None)
    correction = getattr(node, "_saved_correction", None)
    keepdim = bool(getattr(node, "_saved_keepdim", False))
    return sys.modules["torch"].var(x, dim=dim, correction=correction, keepdim=keepdim), [x]


_UNARY = {
    "LogBackward0": "log",
    "Log2Backward0": "log2",
    "Log10Backward0": "log10",
    "Log1PBackward0": "log1p",
    "AcosBackward0": "acos",
    "AsinBackward0": "asin",
    "AtanhBackward0": "atanh",
    "AcoshBackward0": "acosh",
    "LgammaBackward0": "lgamma",
    "DigammaBackward0": "digamma",
    "ErfinvBackward0": "erfinv",
    "SinhBackward0": "sinh",
    "CoshBackward0": "cosh",
    "LogitBackward0": "logit",
}
_OPS: dict[str, Rule] = {
    **{node: _unary(name) for node, name in _UNARY.items()},
    "DivBackward0": _binary("div"),
    "MulBackward0": _binary("mul"),
    "XlogyBackward0": _binary("xlogy"),
    "MmBackward0": _binary("mm", other="_saved_mat2"),
    "DivBackward1": _with_scalar("div", "_saved_other"),
    "MulBackward1": _with_scalar("mul", "_saved_other"),
    "PowBackward0": _with_scalar("pow", "_saved_exponent"),
    "VarBackward0": _var,
}


def locate(roots: list[Any], known: dict[Any, Any]) -> GraphBirth | None:
    """The first birth in the graph of ``roots`` (non-finite tensors with a ``grad_fn``), or None when the search
    cannot tell. ``known``: node -> its output tensor, for nodes whose outputs were checked finite (the outputs of
    the step's outermost module calls): the walk stops there."""
    torch = sys.modules["torch"]
    nodes = _walk([t.grad_fn for t in roots if is_tensor(t) and t.grad_fn is not None], known)
    outputs: dict[Any, Any] = dict(known)
    clean = set(known)
    with torch.no_grad():
        for node in sorted(nodes, key=_created):
            try:
                found = _judge(node, outputs, clean)
            except Exception:  # noqa: BLE001 - a node we cannot read (freed, in-place modified): not this one
                continue
            if found is not None:
                found.searched = len(nodes)
                return found
    return None


def _walk(starts: list[Any], known: dict[Any, Any]) -> list[Any]:
    seen: set[Any] = set()
    pending = list(starts)
    order: list[Any] = []
    while pending and len(order) < MAX_NODES:
        node = pending.pop()
        if node is None or node in seen or node in known:
            continue
        seen.add(node)
        if type(node).__name__ == "AccumulateGrad":
            continue
        order.append(node)
        pending.extend(next_node for next_node, _ in node.next_functions)
    return order


def _created(node: Any) -> int:
    try:
        return int(node._sequence_nr())
    except (AttributeError, RuntimeError):
        return 1 << 62


def _judge(node: Any, outputs: dict[Any, Any], clean: set[Any]) -> GraphBirth | None:
    producers = [next_node for next_node, _ in node.next_functions]

    def value(slot: int, saved: str) -> Any:
        tensor: Any = getattr(node, saved, None)
        if is_tensor(tensor):
            return tensor.detach()
        producer = producers[slot] if slot < len(producers) else None
        if producer is not None and outputs.get(producer) is not None:
            return outputs[producer]
        leaf: Any = getattr(producer, "variable", None)  # an AccumulateGrad: its output is the leaf (a parameter)
        return leaf.detach() if is_tensor(leaf) else None

    output: Any = getattr(node, "_saved_result", None)
    inputs: list[Any] | None = None
    rule = _OPS.get(type(node).__name__)
    if rule is not None:
        recomputed = rule(node, value)
        if recomputed is not None:
            fresh, inputs = recomputed
            output = output if is_tensor(output) else fresh
    if not is_tensor(output):
        return None
    output = output.detach()
    outputs[node] = output
    made = exact_counts([output])
    if not made:
        clean.add(node)
        return None
    exact = inputs is not None
    if inputs is None:  # only the result is known: the inputs are what the node saved besides it
        inputs = [
            getattr(node, name).detach()
            for name in dir(node)
            if name.startswith("_saved_") and name != "_saved_result" and is_tensor(getattr(node, name, None))
        ]
    tensors = [x for x in inputs if is_tensor(x)]
    numbers = [x for x in inputs if isinstance(x, (int, float)) and not isinstance(x, bool)]
    seen, scalars = exact_counts(tensors), number_counts(numbers)
    carried = NonFiniteCounts(seen.nan + scalars.nan, seen.posinf + scalars.posinf, seen.neginf + scalars.neginf)
    if not born(made, carried):
        return None
    # exact when the op ran again on all its inputs; else an input the node did not save came from a producer whose
    # output is not known, which may have carried the value in
    exact = exact or all(p is None or p in clean or type(p).__name__ == "AccumulateGrad" for p in producers)
    return GraphBirth(node, made, carried, tensors, output, exact)
