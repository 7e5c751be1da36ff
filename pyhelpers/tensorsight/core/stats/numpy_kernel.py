"""The statistics of a numpy array (``array_stats``): the figures of ``torch_kernel``, for numpy, in float64.

Called by ``dispatch`` (``compute_stats``, and ``elements_to_read``/``strided_sample`` through ``numpy_kind``,
``np_unexpand`` and ``np_sample``); tests call ``array_stats`` directly. memmap and other subclasses are read as plain
arrays, a bounded chunk at a time; expanded (stride-0) dimensions are read once. Nothing is written to the array.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from tensorsight.core.stats.figures import (
    DEFAULT_BUDGET,
    Stats,
    StatsBudget,
    Totals,
    dim_steps,
    needs_centring,
    sample_step,
    unavailable,
)


def array_stats(a: Any, budget: StatsBudget = DEFAULT_BUDGET, *, zeros: bool = False) -> Stats:
    """Stats of a numpy array (memmap and other subclasses read as plain arrays); float64 accumulation."""
    import numpy as np

    a = np.asarray(a)
    numel = int(a.size)
    kind = numpy_kind(a.dtype)
    if kind == "none":
        return unavailable(numel, _numpy_why_not(a.dtype))
    if numel == 0:
        return Stats(numel=0, kind=kind, nan=0, posinf=0, neginf=0, zeros=0 if zeros else None)
    base, repeats = np_unexpand(a)
    exact = base.size <= budget.exact_elements
    target = base if exact else np_sample(base, budget.sample_elements)
    factor = repeats * (base.size / target.size)
    totals = Totals(zeros=0 if zeros else None)
    with np.errstate(all="ignore"):
        chunks = _np_chunks(np, target, budget.chunk_elements)
        for chunk in chunks:
            _np_accumulate(np, chunk, kind, totals)
        if kind in ("float", "int") and needs_centring(totals):
            mean = float(totals.total.real) / totals.finite
            centred = 0.0
            for chunk in _np_chunks(np, target, budget.chunk_elements):
                d = chunk.astype(np.float64)
                d = d[np.isfinite(d)] - mean
                centred += _np_square_sum(np, d)
            totals.centred = centred
    return totals.finish(numel, kind, factor, exact, inf_signed=kind != "complex")


def numpy_kind(dtype: Any) -> str:
    return {"f": "float", "i": "int", "u": "int", "b": "bool", "c": "complex"}.get(dtype.kind, "none")


def _numpy_why_not(dtype: Any) -> str:
    if dtype.kind == "O":
        return "object array: elements are Python objects"
    if dtype.kind == "V":
        return "structured array: stats are per field" if dtype.names else "raw bytes (void dtype)"
    if dtype.kind in "US":
        return "string array"
    if dtype.kind in "mM":
        return "dates/times: no numeric stats"
    return f"dtype {dtype}: no numeric stats"


def np_unexpand(a: Any) -> tuple[Any, int]:
    repeats = 1
    index = []
    for size, stride in zip(a.shape, a.strides, strict=True):
        if stride == 0 and size > 1:
            index.append(slice(0, 1))
            repeats *= int(size)
        else:
            index.append(slice(None))
    return (a[tuple(index)] if repeats > 1 else a), repeats


def _np_flat(a: Any) -> Any | None:
    if a.flags.c_contiguous:
        return a.reshape(-1)
    if a.flags.f_contiguous:
        return a.T.reshape(-1)
    order = sorted(range(a.ndim), key=lambda d: (-abs(a.strides[d]), -a.shape[d]))
    permuted = a.transpose(order)
    if permuted.flags.c_contiguous:
        return permuted.reshape(-1)
    return None


def np_sample(a: Any, target: int) -> Any:
    flat = _np_flat(a)
    if flat is not None:
        last = int(a.shape[-1]) if a.ndim else 1
        return flat[:: sample_step(flat.size, target, last)]
    return a[tuple(slice(None, None, step) for step in dim_steps(tuple(a.shape), target))]


def _np_chunks(np: Any, a: Any, chunk: int) -> Iterator[Any]:
    flat = _np_flat(a)
    if flat is not None:
        for start in range(0, flat.size, chunk):
            yield flat[start : start + chunk]
        return
    yield from (np.ascontiguousarray(block).reshape(-1) for block in _np_blocks(a, chunk))


def _np_blocks(a: Any, chunk: int) -> Iterator[Any]:
    if a.size <= chunk or a.ndim <= 1:
        if a.ndim == 1 and a.size > chunk:
            for start in range(0, a.shape[0], chunk):
                yield a[start : start + chunk]
        else:
            yield a
        return
    per_row = max(1, a[0].size)
    if per_row > chunk:
        for row in range(a.shape[0]):
            yield from _np_blocks(a[row], chunk)
        return
    rows = max(1, chunk // per_row)
    for start in range(0, a.shape[0], rows):
        yield a[start : start + rows]


def _np_square_sum(np: Any, d: Any) -> float:
    """Σx² of a float64 chunk without BLAS (whose thread pool would linger and compete with the program's)."""
    return float(np.einsum("i,i->", d, d))


def _np_accumulate(np: Any, chunk: Any, kind: str, totals: Totals) -> None:
    n = int(chunk.size)
    totals.counted += n
    if totals.zeros is not None:
        totals.zeros += n - int(np.count_nonzero(chunk))
    if kind == "bool":
        true_count = int(np.count_nonzero(chunk))
        totals.finite += n
        totals.total += true_count
        totals.sumsq += true_count
        totals.low = min(totals.low, 0.0 if true_count < n else 1.0)
        totals.high = max(totals.high, 1.0 if true_count > 0 else 0.0)
        return
    if kind == "complex":
        z = chunk.astype(np.complex128)
        finite = np.isfinite(z)
        nan = np.isnan(z)
        totals.nan += int(np.count_nonzero(nan))
        totals.posinf += int(np.count_nonzero(np.isinf(z) & ~nan))
        kept = z[finite]
        totals.finite += int(kept.size)
        if kept.size:
            magnitude = np.abs(kept)
            totals.total += complex(kept.sum())
            totals.sumsq += _np_square_sum(np, magnitude)
            totals.low = min(totals.low, float(magnitude.min()))
            totals.high = max(totals.high, float(magnitude.max()))
        return
    d = chunk.astype(np.float64)
    total = float(d.sum())
    if kind == "int" or math.isfinite(total):
        sumsq = _np_square_sum(np, d)
        if math.isfinite(sumsq) or kind == "int":
            totals.finite += n
            totals.total += total
            totals.sumsq += sumsq
            totals.low = min(totals.low, float(d.min()))
            totals.high = max(totals.high, float(d.max()))
            return
    _np_nonfinite(np, d, totals)


def _np_nonfinite(np: Any, d: Any, totals: Totals) -> None:
    """Exact NaN/+Inf/-Inf counts and the figures of the finite values of a float64 chunk that holds non-finite
    values (``d``: our own copy, which this overwrites). ``isnan``/``isinf`` masks counted by ``count_nonzero``
    (vectorised; a bool ``sum`` is not); an all-NaN chunk stops at its count, and the sign of Inf is looked at only
    when there is one. The range comes from ``fmin``/``fmax``, which skip NaN (Inf made NaN first), and the sums
    from the same copy with zeros in place of the non-finite values: no copy of the finite values."""
    n = int(d.size)
    nan_mask = np.isnan(d)
    nan = int(np.count_nonzero(nan_mask))
    totals.nan += nan
    if nan == n:
        return
    infinite = np.isinf(d)
    inf = int(np.count_nonzero(infinite))
    if inf:
        posinf = int(np.count_nonzero(d == np.inf))
        totals.posinf += posinf
        totals.neginf += inf - posinf
        if nan + inf == n:
            return
        np.putmask(d, infinite, np.nan)
        nan_mask |= infinite
    totals.finite += n - nan - inf
    totals.low = min(totals.low, float(np.fmin.reduce(d)))
    totals.high = max(totals.high, float(np.fmax.reduce(d)))
    np.putmask(d, nan_mask, 0.0)  # ``putmask``: several times faster than ``copyto(where=)``
    totals.total += float(d.sum())
    totals.sumsq += _np_square_sum(np, d)
