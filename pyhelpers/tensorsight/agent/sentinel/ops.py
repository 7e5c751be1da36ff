"""What an op is to the sentinel: how it is checked (policy), how a user reads its name, and whether the NaN/Inf in
its output was born there or carried in from an input. Pure judgement over values; used by the outside-modules mode
(``outside``) and the replays (``replay``)."""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

from tensorsight.agent.runtime.tensor_walk import exact_counts, is_array, is_tensor, number_counts, suspects
from tensorsight.core.l10n import t
from tensorsight.core.nonfinite import NonFiniteCounts

MAX_SCANNED_NUMBERS = 10_000  # Python numbers read from list arguments when judging an op's inputs

SKIP, CHECK, INPLACE, BACKWARD = 0, 1, 2, 3
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
# finite gradients (selections, masks, bounded activations). Outside modules they pass through unchecked. Not softmax
# or log_softmax: of a row that is all -inf (a fully masked attention row) they are NaN.
_ALWAYS_FINITE = frozenset(
    "neg __neg__ abs gather index_select take take_along_dim cat concat concatenate stack hstack vstack clone "
    "contiguous relu relu_ relu6 hardtanh leaky_relu where max min amax amin maximum minimum clamp clip sort topk "
    "masked_select masked_fill masked_fill_ flip roll repeat tile pad one_hot sigmoid tanh gelu "
    "silu hardswish hardsigmoid dropout sign floor ceil round trunc".split()
)
# Ops whose backward cannot turn finite gradients into NaN/Inf, though their forward can overflow: checked forward,
# not watched backward. Everything else (log, sqrt, div, pow, exp, norms, matmul, losses...) is watched both ways.
GRADIENT_SAFE = frozenset(
    "add __add__ __radd__ __iadd__ add_ sub __sub__ __rsub__ __isub__ sub_ sum mean float double mse_loss l1_loss "
    "smooth_l1_loss huber_loss".split()
)
BACKWARD_FUNCS: set[Any] = set()
_INPLACE_DUNDERS = frozenset(
    "__iadd__ __isub__ __imul__ __itruediv__ __ifloordiv__ __imod__ __ipow__ __imatmul__ __setitem__".split()
)
policies: dict[Any, int] = {}

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


def policy_of(func: Any) -> int:
    policy = policies.get(func)
    if policy is not None:
        return policy
    name = getattr(func, "__name__", "") or ""
    if func in BACKWARD_FUNCS:
        policy = BACKWARD
    elif name in _SKIP_NAMES or name in _ALWAYS_FINITE:
        policy = SKIP
    elif name in _INPLACE_DUNDERS or (name.endswith("_") and not name.startswith("_")):
        policy = INPLACE
    else:
        policy = CHECK
    try:
        policies[func] = policy
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


class Birth(NamedTuple):
    """Where an op's NaN/Inf comes from when it is born in that op: the phase ("forward" | "data"), where the data
    came from, and what the inputs carried in (Inf that the op turned into NaN; empty when they were finite)."""

    phase: str
    source: str
    carried: NonFiniteCounts


def judge_inputs(args: Any, kwargs: Any, counts: NonFiniteCounts, skip_first: bool) -> Birth | None:
    """The birth when the output's NaN/Inf is born in this op, None when an input already carried it. Tensors and
    Python numbers are inputs; numpy arrays are outside data. ``skip_first``: the first argument is the in-place
    target, not an input."""
    tensors: list[Any] = []
    scalars: list[Any] = []
    arrays: list[Any] = []
    flat = list(args)[1:] if skip_first else list(args)
    flat.extend(kwargs.values())
    _collect_inputs(flat, tensors, scalars, arrays, 0)
    seen = exact_counts([tensors[i] for i in suspects(tensors)])
    numbers = number_counts(scalars)
    carried = NonFiniteCounts(seen.nan + numbers.nan, seen.posinf + numbers.posinf, seen.neginf + numbers.neginf)
    if not born(counts, carried):
        return None
    if arrays and exact_counts(arrays):
        return Birth("data", _describe_sources(arrays), carried)
    if not tensors and arrays:
        return Birth("data", _describe_sources(arrays), carried)
    return Birth("forward", "", carried)


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
    return t("a numpy array {0} {1}", list(first.shape), first.dtype)


def born(out: NonFiniteCounts, carried: NonFiniteCounts) -> bool:
    """A NaN is born when no input carried a NaN; an Inf when no input carried any NaN/Inf."""
    if out.nan and not carried.nan:
        return True
    return bool(out.posinf + out.neginf) and not carried


def inherited(out: NonFiniteCounts, incoming: NonFiniteCounts) -> bool:
    """The outermost module's NaN came in through its inputs (a NaN in, or Inf in and only Inf out)."""
    if out.nan:
        return bool(incoming.nan)
    return bool(incoming)
