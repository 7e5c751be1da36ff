"""What a value "contains", tensor-wise, and cheap batched NaN/Inf checks over many tensors.

The breakpoint predicates (``agent.conditions``) and the NaN sentinel (``agent.sentinel``) accept the same things: a
tensor, a numpy array, a Python number, an ``nn.Module`` (its parameters, buffers and gradients), an optimizer (the
parameters it updates and their gradients), or a list/tuple/set/dict/iterator of these. ``gather`` flattens such a
value; ``suspects`` finds the tensors that may hold a NaN/Inf with one reduction per tensor and a single device sync
for all of them, so checking a whole model costs about one pass over its weights.

Nothing here records autograd history, writes to a tensor, or touches the global RNG. torch and numpy are never
imported here: they are reached through ``agent.runtime.user_libs``, only when the program has already imported them
(its ``is_tensor``/``is_array``/``is_module``/``is_optimizer`` are the ones callers of this module use too).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from tensorsight.agent.runtime.user_libs import is_array, is_module, is_optimizer, is_tensor, loaded_torch
from tensorsight.core.nonfinite import NONE_FOUND, NonFiniteCounts, nonfinite_counts

MAX_ITEMS = 100_000  # elements of a Python container we look at (a list of tensors, never a list of floats per se)
MAX_DEPTH = 6


@dataclass
class Gathered:
    """The leaves of a value: tensors, numpy arrays, plain numbers, and a note for each thing we could not read."""

    tensors: list[Any] = field(default_factory=list)
    arrays: list[Any] = field(default_factory=list)
    numbers: list[complex | float | int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    truncated: bool = False

    @property
    def empty(self) -> bool:
        return not (self.tensors or self.arrays or self.numbers)


def type_name(value: Any) -> str:
    kind = type(value)
    module = kind.__module__
    return kind.__qualname__ if module in ("builtins", None) else f"{module}.{kind.__qualname__}"


def optimizer_parameters(optimizer: Any) -> list[Any]:
    seen: set[int] = set()
    params = []
    for group in getattr(optimizer, "param_groups", []):
        for param in group.get("params", []):
            if is_tensor(param) and id(param) not in seen:
                seen.add(id(param))
                params.append(param)
    return params


def gradients_of(value: Any, gathered: Gathered | None = None) -> Gathered:
    """The gradients a value stands for: a module's or optimizer's parameter ``.grad``s, a leaf tensor's ``.grad``,
    or a tensor that is not a parameter itself (``grad_norm(p.grad)``)."""
    out = gathered if gathered is not None else Gathered()
    for item in _walk(value, out, 0):
        if is_module(item):
            out.tensors.extend(p.grad for p in item.parameters() if p.grad is not None)
        elif is_optimizer(item):
            out.tensors.extend(p.grad for p in optimizer_parameters(item) if p.grad is not None)
        elif is_tensor(item):
            if item.requires_grad:
                if item.is_leaf and item.grad is not None:  # non-leaf .grad would warn; it has none anyway
                    out.tensors.append(item.grad)
            else:
                out.tensors.append(item)
        elif is_array(item):
            out.arrays.append(item)
        else:
            out.problems.append(f"expected a module, optimizer, parameters or gradient tensors; got {type_name(item)}")
    return out


def gather(value: Any, with_grads: bool = True) -> Gathered:
    """Flatten ``value`` into tensors/arrays/numbers; modules and optimizers contribute their parameters (and buffers)
    and, with ``with_grads``, the parameters' gradients. ``None`` contributes nothing (a gradient not computed yet)."""
    out = Gathered()
    for item in _walk(value, out, 0):
        if is_tensor(item):
            out.tensors.append(item)
        elif is_module(item):
            params = list(item.parameters())
            out.tensors.extend(params)
            out.tensors.extend(item.buffers())
            if with_grads:
                out.tensors.extend(p.grad for p in params if p.grad is not None)
        elif is_optimizer(item):
            params = optimizer_parameters(item)
            out.tensors.extend(params)
            if with_grads:
                out.tensors.extend(p.grad for p in params if p.grad is not None)
        elif is_array(item):
            out.arrays.append(item)
        elif isinstance(item, numbers.Number):
            out.numbers.append(item)  # type: ignore[arg-type]
        else:
            out.problems.append(
                f"expected a tensor, array, number, module, optimizer or a list/dict of them; got {type_name(item)}"
            )
    return out


def _walk(value: Any, out: Gathered, depth: int) -> Iterator[Any]:
    """Leaves of nested containers (lists, tuples, sets, dict values, iterators) up to a bounded size and depth."""
    if value is None:
        return
    if isinstance(value, (str, bytes)):
        yield value  # reported as a problem by the caller
        return
    if is_tensor(value) or is_array(value) or is_module(value) or is_optimizer(value):
        yield value
        return
    if isinstance(value, numbers.Number):
        yield value
        return
    if isinstance(value, Mapping):
        items: Any = value.values()
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = value
    elif hasattr(value, "__next__") and hasattr(value, "__iter__"):
        items = value  # a generator such as model.parameters(): the caller made it for us
    else:
        yield value
        return
    if depth >= MAX_DEPTH:
        out.problems.append(f"containers nested deeper than {MAX_DEPTH} levels are not looked into")
        return
    for count, item in enumerate(items):
        if count >= MAX_ITEMS:
            out.truncated = True
            return
        yield from _walk(item, out, depth + 1)


# ---- checks ---------------------------------------------------------------------------------------------------------


FOREACH_FROM = 8  # from this many tensors on, one fused norm over all of them beats a sum per tensor


def suspects(tensors: list[Any]) -> list[int]:
    """Indices of the tensors that may hold a NaN/Inf (a finite sum proves a tensor clean).

    One reduction per tensor (a single fused norm for many tensors) and one device sync for all of them. Integer and
    bool tensors are always finite; sparse and other non-strided layouts are checked exactly, one by one; meta tensors
    have no values. An index can be a false alarm only when large finite values overflow the reduction: callers
    confirm with ``exact_counts``. Reduces detached views, so no autograd history is recorded.
    """
    torch = loaded_torch()
    if torch is None or not tensors:
        return []
    found: list[int] = []
    owners: list[int] = []
    values: list[Any] = []
    strided = torch.strided
    for index, t in enumerate(tensors):
        if t is None:
            continue
        dtype = t.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            continue
        if t.layout is not strided or t.is_meta:
            if t.layout is not strided and _safe_counts(t):
                found.append(index)
            continue
        view = t.detach()
        values.append(torch.view_as_real(view) if dtype.is_complex else view)
        owners.append(index)
    if not values:
        return found
    if len(values) >= FOREACH_FROM and _all_finite_fused(torch, values):
        return found
    sums = [v.sum(dtype=torch.float32) if v.dtype.itemsize < 4 else v.sum() for v in values]
    if len(sums) == 1:
        clean = math.isfinite(sums[0].item())
    else:
        try:
            clean = math.isfinite(torch.stack(sums).sum().item())
        except RuntimeError:  # sums on different devices: one sync each
            clean = all(math.isfinite(s.item()) for s in sums)
    if clean:
        return found
    found.extend(index for index, total in zip(owners, sums, strict=True) if not math.isfinite(total.item()))
    return sorted(found)


def _all_finite_fused(torch: Any, values: list[Any]) -> bool:
    """True when one fused norm over all the tensors is finite (False also when it cannot be computed)."""
    foreach_norm = getattr(torch, "_foreach_norm", None)
    if foreach_norm is None:
        return False
    try:
        return math.isfinite(torch.stack(foreach_norm(values)).sum().item())
    except (RuntimeError, TypeError):  # mixed devices or dtypes the fused kernel refuses
        return False


def _safe_counts(value: Any) -> NonFiniteCounts | None:
    try:
        return nonfinite_counts(value)
    except Exception:  # noqa: BLE001 - a tensor subclass may refuse anything
        return None


def exact_counts(values: list[Any]) -> NonFiniteCounts:
    """Summed exact NaN/+Inf/-Inf counts of tensors or arrays (unknowable ones count as clean)."""
    nan = posinf = neginf = 0
    for value in values:
        counts = _safe_counts(value)
        if counts:
            nan += counts.nan
            posinf += counts.posinf
            neginf += counts.neginf
    return NonFiniteCounts(nan, posinf, neginf)


def number_counts(values: list[Any]) -> NonFiniteCounts:
    nan = posinf = neginf = 0
    for value in values:
        parts = (value.real, value.imag) if isinstance(value, complex) else (value,)
        for part in parts:
            try:
                f = float(part)
            except (TypeError, ValueError, OverflowError):
                continue
            if math.isnan(f):
                nan += 1
            elif f == math.inf:
                posinf += 1
            elif f == -math.inf:
                neginf += 1
    return NonFiniteCounts(nan, posinf, neginf)


def nonfinite_of(gathered: Gathered) -> NonFiniteCounts:
    """Exact NaN/Inf counts over everything gathered, paying only the fast reduction when all is finite."""
    total = number_counts(gathered.numbers)
    flagged = [gathered.tensors[i] for i in suspects(gathered.tensors)]
    found = [total, exact_counts(flagged), exact_counts(gathered.arrays)]
    if not any(found):
        return NONE_FOUND
    return NonFiniteCounts(sum(c.nan for c in found), sum(c.posinf for c in found), sum(c.neginf for c in found))
