"""Budgeted summary statistics of torch tensors and numpy arrays: the figures behind every summary line.

Called by the agent's presentation (Variables view, hover, watch, repl), the module and gradient-norm lines, and the
toolbox. Pure functions plus one small cache; no I/O.

Exact by default, and fast enough to be: a dense float32 tensor costs three reductions (row-wise ``sum`` and
``vector_norm`` over rows of ROW_ELEMENTS, whose per-row results are added in float64, and ``aminmax``), with no
temporary beyond two floats per 4096 elements. On the CPU they run a cache tile at a time (CACHE_TILE_BYTES), so
memory is read about once: about 2.6 ``sum`` passes. Other dtypes and layouts go through
chunks of ``chunk_elements`` (converted or copied one chunk at a time); complex values through their real view. A
finite row sum proves that no element of the row is NaN or Inf; on the CPU the range is taken after the sums, over
the clean rows only, and only the bad rows are copied and counted element by element: exact NaN/+Inf/-Inf counts,
kept out of the figures, at the three passes of a clean tensor when they are few (a tensor full of them pays per
bad element, in bounded chunks).
Expanded dimensions (stride 0) are reduced once and counted as repeats, so a huge ``expand`` stays exact and cheap.
Past ``exact_elements`` the figures come from a deterministic strided sample and are marked inexact; nothing here
draws from an RNG.

Nothing here mutates its input, bumps ``_version``, records autograd history, or lets a tensor subclass's
``__torch_function__`` run. On CUDA the reductions stay on the device and the results come back in one transfer
(a few more only when the tensor holds NaN/Inf). :class:`StatsCache` keys results on the tensor's identity,
``_version``, shape, strides, data pointer, dtype and device, so an unchanged tensor is summarised again for a
dict lookup.
"""

from __future__ import annotations

import bisect
import contextlib
import math
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from tensorsight.core.nonfinite import NonFiniteCounts

ROW_ELEMENTS = 4096  # sums are taken per row of this many values (float32 rounding per row), then in float64;
# 1e8 elements make 24K rows: few enough that adding them up is a small single-threaded op
CANCELLATION_LIMIT = 1e3  # when mean² dwarfs the variance by this much, recompute the variance from centred values
CACHE_TILE_BYTES = 8 << 20  # CPU summaries read dense data in tiles this big, which stay in a last-level cache
# between the passes (measured on 1e8 float32 values: 2.3 passes' time for three passes instead of 3)
SLOW_TILE_SECONDS = 2e-3  # three reductions of one such tile take ~0.5 ms on an idle CPU; slower means threads
# held up by other work, and the rest of the tensor goes in one span (a few large kernels instead of many small)
SUMMARY_PASSES = 3  # whole-tensor reductions of a float summary (sums, norms, range); ``spread=False`` runs the first


@dataclass(frozen=True)
class StatsBudget:
    """How much work one summary may do.

    ``exact_elements``: tensors with more (distinct) elements are summarised from a strided sample of about
    ``sample_elements`` elements, and the result says so. ``chunk_elements``: the largest temporary any pass allocates,
    in elements (4M float32 = 16 MB, 4% of a 1e8-element float32 tensor; float32/64 data that is already dense
    needs no temporary at all). ``spread``: False asks float and complex tensors for the one pass that finds NaN/Inf
    (exact counts, the finite count and the sum, hence the mean) and leaves out σ and the range, the two passes
    more that a whole summary costs (``SUMMARY_PASSES``): what a line can still afford for a huge tensor.
    """

    exact_elements: int = 1 << 28
    sample_elements: int = 1 << 20
    chunk_elements: int = 1 << 22
    spread: bool = True


DEFAULT_BUDGET = StatsBudget()


@dataclass(frozen=True)
class Stats:
    """What is known about the values of one tensor or array.

    ``kind`` is ``float``, ``int``, ``bool``, ``complex`` or ``none`` (no numeric values: meta tensor, object
    array...; ``note`` says why). ``min``/``max``/``mean``/``std`` cover the finite elements only (``std`` with
    Bessel's correction, like ``torch.std``); for complex values ``min``/``max`` are of ``|z|``. NaN/Inf counts are
    element counts; a complex element with an infinite part counts in ``posinf`` and ``inf_signed`` is False.
    ``exact`` is False when the figures (counts included) were extrapolated from ``counted`` sampled elements.
    ``zeros`` is None until asked for (it costs one more pass). ``complete`` is False when σ and the range were left
    out (``StatsBudget.spread``): ``std``, ``sumsq``, ``min`` and ``max`` are then None, the counts and mean stand.
    """

    numel: int
    kind: str
    counted: int = 0
    finite: int = 0
    total: float | complex | None = None
    sumsq: float | None = None
    min: float | None = None
    max: float | None = None
    mean: float | complex | None = None
    std: float | None = None
    nan: int | None = None
    posinf: int | None = None
    neginf: int | None = None
    zeros: int | None = None
    exact: bool = True
    inf_signed: bool = True
    note: str | None = None
    complete: bool = True

    @property
    def has_values(self) -> bool:
        """True when figures were computed (the kind is numeric and there was data to read)."""
        return self.kind != "none" and self.nan is not None

    @property
    def nonfinite(self) -> NonFiniteCounts | None:
        if self.nan is None or self.posinf is None or self.neginf is None:
            return None
        return NonFiniteCounts(self.nan, self.posinf, self.neginf)

    @property
    def all_zero(self) -> bool:
        """Every element is exactly zero (False for an empty tensor, and when that is not known exactly)."""
        return (
            self.exact
            and self.has_values
            and self.numel > 0
            and self.finite == self.numel
            and self.min == 0
            and self.max == 0
        )

    @property
    def norm(self) -> float | None:
        """Euclidean norm of the finite values (what ``clip_grad_norm_`` would see for a finite gradient)."""
        return None if self.sumsq is None else math.sqrt(max(self.sumsq, 0.0))


def unavailable(numel: int, note: str) -> Stats:
    """Stats that say why nothing about the values can be known."""
    return Stats(numel=numel, kind="none", note=note)


def compute_stats(value: Any, budget: StatsBudget = DEFAULT_BUDGET, *, zeros: bool = False) -> Stats | None:
    """Stats of a torch tensor or numpy array; None for anything else. May raise on hostile input: callers guard."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return tensor_stats(value, budget, zeros=zeros)
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.ndarray):
        return array_stats(value, budget, zeros=zeros)
    return None


def elements_to_read(value: Any) -> int:
    """How many elements ``compute_stats`` would reduce: what its figures cost (0 for a meta tensor or a string
    array, the stored values of a sparse tensor, the distinct elements of an expanded one). May raise: callers guard.
    """
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        with plain_tensors(torch):
            if getattr(value, "is_nested", False) or value.device.type == "meta" or _why_no_data(torch, value):
                return 0
            if value.layout != torch.strided:
                return (
                    int(value._nnz()) if value.is_sparse or value.layout in _compressed(torch) else int(value.numel())
                )
            return int(_unexpand(value)[0].numel())
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.ndarray):
        array = np.asarray(value)
        return 0 if _numpy_kind(array.dtype) == "none" else int(_np_unexpand(array)[0].size)
    return 0


def strided_sample(value: Any, target: int) -> Any:
    """A deterministic strided view of about ``target`` of the distinct values of a dense torch tensor or numpy
    array (expanded dimensions read once), without copying or drawing from an RNG: the sample the figures use past
    ``exact_elements``, for callers that draw a picture of a huge tensor (the viewer's histogram). The value's
    distinct elements as they are (not flattened) when there are no more than ``target``. May raise: callers guard.
    """
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        with plain_tensors(torch):
            base = _unexpand(value)[0]
            return base if base.numel() <= target else _torch_sample(torch, base, target)
    import numpy as np

    base = _np_unexpand(np.asarray(value))[0]
    return base if base.size <= target else _np_sample(base, target)


# ---- accumulation shared by both libraries ------------------------------------------------------------------------


@dataclass
class _Totals:
    """Raw sums over the elements actually read; ``finish`` turns them into Stats for the whole tensor."""

    counted: int = 0
    finite: int = 0
    total: float | complex = 0.0
    sumsq: float = 0.0
    low: float = math.inf
    high: float = -math.inf
    nan: int = 0
    posinf: int = 0
    neginf: int = 0
    zeros: int | None = None
    centred: float | None = None  # sum of squared deviations from the mean, when computed directly
    complete: bool = True  # False: sumsq and the range were not computed (``StatsBudget.spread``)

    def finish(self, numel: int, kind: str, factor: float, exact: bool, inf_signed: bool = True) -> Stats:
        """Scale by ``factor`` (expanded repeats, or numel/sample when sampled) and derive mean and std."""
        finite = self.finite * factor
        mean: float | complex | None = None
        std: float | None = None
        low: float | None = self.low if self.finite else None
        high: float | None = self.high if self.finite else None
        if self.finite:
            mean = self.total / self.finite
            if finite > 1:
                if low is not None and low == high and kind != "complex":
                    variance = 0.0
                elif self.centred is not None:
                    variance = self.centred * factor / (finite - 1)
                else:
                    variance = (self.sumsq * factor - abs(self.total * factor) ** 2 / finite) / (finite - 1)
                std = math.sqrt(max(variance, 0.0))
        total = self.total * factor
        if kind in ("int", "bool") and exact:
            total = round(total.real)
        # without the spread pass (``StatsBudget.spread``) σ, sumsq and the range are unknown: left None
        spread: dict[str, Any] = (
            {"sumsq": self.sumsq * factor, "min": low, "max": high, "std": std}
            if self.complete
            else {"complete": False}
        )
        return Stats(
            numel=numel,
            kind=kind,
            counted=self.counted,
            finite=round(finite),
            total=total,
            mean=mean,
            nan=round(self.nan * factor),
            posinf=round(self.posinf * factor),
            neginf=round(self.neginf * factor),
            zeros=None if self.zeros is None else round(self.zeros * factor),
            exact=exact,
            inf_signed=inf_signed,
            **spread,
        )


def _needs_centring(t: _Totals) -> bool:
    """True when E[x²] - mean² would lose the variance to rounding (|mean| ≫ std), so it must be recomputed."""
    if t.finite < 2 or t.low == t.high:
        return False
    mean_sq = abs(t.total / t.finite) ** 2
    variance = t.sumsq / t.finite - mean_sq
    return variance <= 0 or mean_sq / variance > CANCELLATION_LIMIT


def _sample_step(numel: int, target: int, last_dim: int) -> int:
    """A flat stride giving about ``target`` elements that does not alias the last dimension (no single column)."""
    step = max(1, math.ceil(numel / max(1, target)))
    if last_dim > 1:
        while math.gcd(step, last_dim) != 1:
            step += 1
    return step


def _dim_steps(shape: tuple[int, ...], target: int) -> list[int]:
    """Per-dimension strides whose product cuts ``shape`` down to about ``target`` elements, spread over all dims."""
    numel = math.prod(shape)
    if numel <= target or numel <= 1:
        return [1] * len(shape)
    share = math.log(numel / max(1, target)) / math.log(numel)
    return [max(1, min(size, round(size**share))) for size in shape]


# ---- torch ---------------------------------------------------------------------------------------------------------


def tensor_stats(t: Any, budget: StatsBudget = DEFAULT_BUDGET, *, zeros: bool = False) -> Stats:
    """Stats of a torch tensor of any layout, dtype and device (see the module docstring for the cost)."""
    import torch

    with torch.no_grad(), plain_tensors(torch):
        return _TorchStats(torch, budget, zeros).of(t)


def zero_count(value: Any, budget: StatsBudget = DEFAULT_BUDGET) -> int | None:
    """Exact number of elements equal to zero, or None when it cannot be known within the budget."""
    stats = compute_stats(value, budget, zeros=True)
    return None if stats is None or not stats.exact else stats.zeros


def plain_tensors(torch: Any) -> Any:
    """Run torch ops with no ``__torch_function__`` at all: a user subclass's never runs inside the debugger, and no
    ``TorchFunctionMode`` on the stack (the program's, or our own shape observers') sees our reads. Modes matter for
    speed too: with one on the stack every tensor attribute read (``.grad``, ``._version``) calls into Python,
    which made a scan of 10,000 parameters 30× slower under the debugger."""
    disable = getattr(torch._C, "DisableTorchFunction", None) or getattr(torch._C, "DisableTorchFunctionSubclass", None)
    return disable() if disable is not None else contextlib.nullcontext()


_SPARSE_COMPRESSED = ("sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc")


def _compressed(torch: Any) -> tuple[Any, ...]:
    return tuple(getattr(torch, name) for name in _SPARSE_COMPRESSED if hasattr(torch, name))


class _TorchStats:
    def __init__(self, torch: Any, budget: StatsBudget, zeros: bool) -> None:
        self.torch = torch
        self.budget = budget
        self.want_zeros = zeros
        self._nonzero: Any = None  # the zero count's tensor, brought back with the next transfer (``_fetch``)
        self._nonzero_fetched: int | None = None

    def of(self, t: Any) -> Stats:
        if getattr(t, "is_nested", False):
            return unavailable(0, "nested tensor: per-component stats are not computed")
        numel = int(t.numel())
        if t.device.type == "meta":
            return unavailable(numel, "meta tensor: shape only, no data")
        without_data = _why_no_data(self.torch, t)
        if without_data:
            return unavailable(numel, without_data)
        layout = str(t.layout).replace("torch.", "").lstrip("_")
        if layout == "sparse_coo":
            values = t._values() if t.is_coalesced() else t.detach().coalesce()._values()
            return self._with_implicit_zeros(values.detach(), numel)
        if layout in _SPARSE_COMPRESSED:
            return self._with_implicit_zeros(t.values().detach(), numel)
        if layout != "strided":
            return unavailable(numel, f"{layout} layout: values not read")
        if t.is_quantized:
            return self._dense(t.detach(), numel, dequantize=True)
        return self._dense(t.detach(), numel)

    # -- dense --------------------------------------------------------------------------------------------------------

    def _dense(self, t: Any, numel: int, dequantize: bool = False) -> Stats:
        kind = _torch_kind(self.torch, t)
        if numel == 0:
            return Stats(numel=0, kind=kind, nan=0, posinf=0, neginf=0, zeros=0 if self.want_zeros else None)
        base, repeats = _unexpand(t)
        exact = base.numel() <= self.budget.exact_elements
        target = base if exact else _torch_sample(self.torch, base, self.budget.sample_elements)
        factor = repeats * (base.numel() / target.numel())
        totals = self._reduce(target, kind, dequantize)
        return totals.finish(numel, kind, factor, exact, inf_signed=kind != "complex")

    def _with_implicit_zeros(self, values: Any, numel: int) -> Stats:
        """Sparse layouts: stats of the stored values, plus every element not stored, which is zero."""
        stored = self._dense(values, int(values.numel()))
        implicit = numel - int(values.numel())
        if implicit <= 0 or stored.kind == "none":
            return replace(stored, numel=numel)
        low = 0.0 if stored.min is None else min(stored.min, 0.0)
        high = 0.0 if stored.max is None else max(stored.max, 0.0)
        totals = _Totals(
            counted=stored.counted + implicit,
            finite=stored.finite + implicit,
            total=stored.total or 0.0,
            sumsq=stored.sumsq or 0.0,
            low=low,
            high=high,
            nan=stored.nan or 0,
            posinf=stored.posinf or 0,
            neginf=stored.neginf or 0,
            zeros=None if stored.zeros is None else stored.zeros + implicit,
        )
        return totals.finish(numel, stored.kind, 1.0, stored.exact, stored.inf_signed)

    def _reduce(self, t: Any, kind: str, dequantize: bool) -> _Totals:
        torch = self.torch

        def pieces() -> list[Any]:
            return list(_torch_chunks(torch, t, self.budget.chunk_elements, dequantize))

        flat = _torch_flat(t) if kind == "float" and not dequantize else None
        if flat is not None and t.dtype in (torch.float32, torch.float64):
            # Dense float32/64 needs no temporaries: on an accelerator it is reduced whole, in three large kernels,
            # and on the CPU tile by tile (``_tiled_rows``). Many small parallel kernels cost more than the data
            # itself on a busy machine.
            chunks = [flat]
        else:
            chunks = pieces()
        counted = sum(int(c.numel()) for c in chunks)
        if self.want_zeros:  # queued before the figures, so that their transfer brings it back too (one sync)
            self._nonzero = torch.stack([torch.count_nonzero(c) for c in chunks]).sum()
        if flat is not None and len(chunks) == 1 and chunks[0] is flat and flat.device.type == "cpu":
            totals = self._float(chunks, pieces, tiled=self.budget.spread)
        elif kind == "bool":
            totals = self._bool(chunks)
        elif kind == "int":
            totals = self._int(chunks, pieces)
        elif kind == "complex":
            totals = self._float(chunks, pieces)
        else:
            totals = self._float(chunks, pieces)
        totals.counted = counted
        if self.want_zeros:
            nonzero = self._nonzero_fetched if self._nonzero is None else int(self._nonzero)
            self._nonzero = self._nonzero_fetched = None
            totals.zeros = counted - int(nonzero or 0)
        return totals

    def _fetch(self, values: list[Any]) -> list[Any]:
        """The one device-to-host transfer of a pass (carrying the zero count, when one is waiting)."""
        torch = self.torch
        waiting = self._nonzero
        if waiting is not None:
            values = [*values, waiting]
        fetched = list(torch.stack([v.to(torch.float64).reshape(()) for v in values]).tolist())
        if waiting is not None:
            self._nonzero, self._nonzero_fetched = None, int(fetched.pop())
        return fetched

    def _float(self, chunks: list[Any], pieces: Callable[[], list[Any]], tiled: bool = False) -> _Totals:
        """Float and complex chunks: three reductions each (per-row Σ and Σ|x|², and the range), one chunk after the
        other, all brought back in one transfer.

        Only a chunk whose figures are not finite is read again, and within it only the rows of ROW_ELEMENTS whose
        own sums are not finite are counted element by element (see ``_repair``), so one NaN in 1e8 values costs
        one chunk's passes more than none. ``tiled``: one dense CPU chunk, whose whole rows go through
        ``_tiled_rows`` and only the last, partial row through the chunk path.
        """
        totals = _Totals()
        is_complex = bool(chunks) and chunks[0].is_complex()
        if tiled:
            (flat,) = chunks
            whole = int(flat.numel()) // ROW_ELEMENTS * ROW_ELEMENTS
            if whole:
                _add(totals, self._tiled_rows(flat[:whole].view(-1, ROW_ELEMENTS)))
            chunks = [flat[whole:]] if whole < flat.numel() else []
        _add(totals, self._chunk_totals(chunks))
        if not self.budget.spread:
            totals.complete = False
        elif not is_complex and _needs_centring(totals):
            totals.centred = self._centred(pieces(), float(totals.total.real) / totals.finite)
        return totals

    def _tiled_rows(self, rows: Any) -> _Totals:
        """Σ, Σx² and the range of dense CPU float rows, a tile of about CACHE_TILE_BYTES at a time.

        The reductions of a tile (row sums, row norms, then its minimum and its maximum, which two kernels find
        faster than one ``aminmax``) follow one another, so all but the first read it from the cache the first one
        brought it into; each writes into one small buffer for the whole tensor (per-row sums and norms,
        per-span minima and maxima), and one transfer brings back the totals. Each small parallel kernel waits for
        every worker thread, which a busy CPU may have descheduled: a tile slower than SLOW_TILE_SECONDS sends the
        rest of the rows through the same three reductions in one span. A span whose figures are not finite is then
        repaired as a chunk (``_repair``): the other spans stand as they are.
        """
        torch = self.torch
        count = int(rows.shape[0])
        tile_bytes = rows.element_size() * ROW_ELEMENTS
        per_tile = max(1, CACHE_TILE_BYTES // tile_bytes)
        slow = SLOW_TILE_SECONDS * per_tile * tile_bytes / CACHE_TILE_BYTES
        sums, norms = rows.new_empty(count), rows.new_empty(count)
        tiles = -(-count // per_tile)
        lows, highs = rows.new_empty(tiles), rows.new_empty(tiles)
        # the views each tile reads and writes, made by five calls for the whole tensor instead of five per tile
        row_tiles, sum_tiles, norm_tiles = rows.split(per_tile), sums.split(per_tile), norms.split(per_tile)
        low_at, high_at = lows.unbind(), highs.unbind()
        spans: list[tuple[int, int]] = []
        clock, amin, amax, norm, total = time.perf_counter, torch.amin, torch.amax, torch.linalg.vector_norm, torch.sum
        for index in range(tiles):
            start = index * per_tile
            began = clock()
            span, span_sums, span_norms = row_tiles[index], sum_tiles[index], norm_tiles[index]
            total(span, 1, out=span_sums)
            norm(span, dim=1, out=span_norms)
            amin(span, out=low_at[index])  # amin then amax: about 10% less than one aminmax on a cached tile
            amax(span, out=high_at[index])
            spans.append((start, min(start + per_tile, count)))
            if clock() - began >= slow and index + 1 < tiles:
                spans.append(self._rest_in_one_span(rows, sums, norms, lows, highs, index + 1, per_tile))
                break
        lows, highs = lows[: len(spans)], highs[: len(spans)]
        row_sums, row_squares = sums.double(), norms.double().square()
        total, sumsq, low, high = self._fetch([row_sums.sum(), row_squares.sum(), lows.min(), highs.max()])
        if all(math.isfinite(v) for v in (total, sumsq, low, high)):
            return _Totals(finite=count * ROW_ELEMENTS, total=total, sumsq=sumsq, low=low, high=high)
        span_ok = [bool(v) for v in (torch.isfinite(lows) & torch.isfinite(highs)).tolist()]
        finite_rows = torch.isfinite(row_sums) & torch.isfinite(row_squares)
        for row in (~finite_rows).nonzero().view(-1).tolist():
            span_ok[bisect.bisect_right(spans, (row, count)) - 1] = False
        good_rows = torch.ones(count, dtype=torch.bool)
        for (a, b), ok in zip(spans, span_ok, strict=True):
            if not ok:
                good_rows[a:b] = False
        good_spans = torch.tensor(span_ok)
        total, sumsq, low, high = self._fetch(
            [
                torch.where(good_rows, row_sums, 0).sum(),
                torch.where(good_rows, row_squares, 0).sum(),
                torch.where(good_spans, lows, math.inf).min(),
                torch.where(good_spans, highs, -math.inf).max(),
            ]
        )
        good_elements = sum(b - a for (a, b), ok in zip(spans, span_ok, strict=True) if ok) * ROW_ELEMENTS
        totals = _Totals(finite=good_elements, total=total, sumsq=sumsq, low=low, high=high)
        for (a, b), ok in zip(spans, span_ok, strict=True):
            if not ok:
                _add(totals, self._repair(rows[a:b].reshape(-1), row_sums[a:b], row_squares[a:b]))
        return totals

    def _rest_in_one_span(
        self, rows: Any, sums: Any, norms: Any, lows: Any, highs: Any, tile: int, per_tile: int
    ) -> tuple[int, int]:
        """Rows from tile ``tile`` on, in one span of three large kernels (the CPU is busy: see ``_tiled_rows``);
        its range goes in slot ``tile``, from one ``aminmax``: the span is not in the cache, so one read beats two.
        A span holding NaN/Inf gets no range here: ``_repair`` takes the range of its clean rows."""
        start = tile * per_tile
        span = rows[start:]
        self.torch.sum(span, 1, out=sums[start:])
        self.torch.linalg.vector_norm(span, dim=1, out=norms[start:])
        if bool(self.torch.isfinite(sums[start:]).all() & self.torch.isfinite(norms[start:]).all()):
            self.torch.aminmax(span, out=(lows[tile], highs[tile]))
        else:
            lows[tile] = highs[tile] = math.nan
        return (start, int(rows.shape[0]))

    def _chunk_totals(self, chunks: list[Any]) -> _Totals:
        """The figures of float or complex chunks, each reduced whole (see ``_float``)."""
        torch = self.torch
        spread = self.budget.spread
        is_complex = bool(chunks) and chunks[0].is_complex()
        width = 2 if is_complex else 1
        per_chunk = width + 3 if spread else width
        rows, values = [], []
        for c in chunks:
            sums, squares = _row_sums(torch, c, squares=spread)
            rows.append((sums, squares))
            values += [*sums.sum(0).reshape(-1)]
            if spread:
                values += [squares.sum(), *torch.aminmax(_magnitudes(c))]
        fetched = self._fetch(values) if values else []
        totals = _Totals()
        for index, c in enumerate(chunks):
            figures = fetched[index * per_chunk : (index + 1) * per_chunk]
            if not all(math.isfinite(v) for v in figures):
                _add(totals, self._repair(c, *rows[index]))
                continue
            total: float | complex = complex(figures[0], figures[1]) if is_complex else figures[0]
            sumsq, low, high = figures[width:] if spread else (0.0, math.inf, -math.inf)
            _add(totals, _Totals(finite=int(c.numel()), total=total, sumsq=sumsq, low=low, high=high))
        return totals

    def _repair(self, c: Any, sums: Any, squares: Any) -> _Totals:
        """Exact figures of a chunk holding NaN/Inf (or finite values whose squares overflow float32).

        Rows with finite sums are all finite: their sums are already known, and their range takes one more reduction
        (over the runs between bad rows, or row by row when there are many runs). Only the bad rows are copied
        (``chunk_elements`` at most at a time) and counted element by element, in float64.
        """
        torch = self.torch
        is_complex = c.is_complex()
        per_row = ROW_ELEMENTS // 2 if is_complex else ROW_ELEMENTS
        n = int(c.numel())
        sums_finite = torch.isfinite(sums).all(1) if is_complex else torch.isfinite(sums)
        spread = squares is not None
        good = sums_finite & torch.isfinite(squares) if spread else sums_finite
        # the row flags come back in one transfer and are searched on the host: ``nonzero`` on the device would
        # synchronise once for its size and once more for its values
        bad = [int(i) for i in (~good).cpu().nonzero().view(-1).tolist()]
        if spread:
            low, high = _good_range(torch, _magnitudes(c), per_row, good, bad)
            square_sum = torch.where(good, squares, 0).sum()
        else:  # one pass: no range, no Σ|x|² (the bad rows still get them below, and they are dropped at the end)
            low = high = square_sum = torch.zeros((), dtype=torch.float64, device=c.device)
        # torch.where rather than boolean indexing, which costs milliseconds even on a few thousand rows
        good_sum = torch.where(good.view(-1, 1) if is_complex else good, sums, 0).sum(0).reshape(-1)
        fetched = self._fetch([*good_sum, square_sum, low, high])
        width = 2 if is_complex else 1
        bad_elements = sum(min((i + 1) * per_row, n) - i * per_row for i in bad)
        totals = _Totals(
            finite=n - bad_elements,
            total=complex(fetched[0], fetched[1]) if is_complex else fetched[0],
            sumsq=fetched[width],
            low=fetched[width + 1] if spread else math.inf,
            high=fetched[width + 2] if spread else -math.inf,
        )
        group = max(1, self.budget.chunk_elements // per_row)
        for start in range(0, len(bad), group):
            block = torch.cat([c[i * per_row : min((i + 1) * per_row, n)] for i in bad[start : start + group]])
            _add(totals, self._careful_complex(block) if is_complex else self._careful_real(block))
        return totals

    def _careful_real(self, block: Any) -> _Totals:
        """NaN/+Inf/-Inf counts and figures over the finite values of a (small) float block, in float64."""
        torch = self.torch
        inf = math.inf
        kept = torch.nan_to_num(block, nan=0.0, posinf=0.0, neginf=0.0).double()  # a new tensor: never in place
        nan, posinf, neginf, finite_n, total, sumsq, low, high = self._fetch(
            [
                torch.isnan(block).sum(),
                (block == inf).sum(),
                (block == -inf).sum(),
                torch.isfinite(block).sum(),
                kept.sum(),
                _square_sum(torch, kept),
                torch.nan_to_num(block, nan=inf, posinf=inf, neginf=inf).amin(),
                torch.nan_to_num(block, nan=-inf, posinf=-inf, neginf=-inf).amax(),
            ]
        )
        return _Totals(
            finite=int(finite_n),
            total=total,
            sumsq=sumsq,
            low=low,
            high=high,
            nan=int(nan),
            posinf=int(posinf),
            neginf=int(neginf),
        )

    def _careful_complex(self, block: Any) -> _Totals:
        """NaN/Inf counts (an infinite part makes an Inf element) and figures over the finite values, complex128."""
        torch = self.torch
        inf = math.inf
        finite = torch.isfinite(block)
        nan = torch.isnan(block)
        kept = torch.where(finite, block, 0).to(torch.complex128)
        magnitude = kept.abs()
        real, imag = torch.view_as_real(kept.sum())
        nan_n, inf_n, finite_n, sumsq, low, high, real_sum, imag_sum = self._fetch(
            [
                nan.sum(),
                (torch.isinf(block) & ~nan).sum(),
                finite.sum(),
                torch.linalg.vector_norm(kept).square(),
                torch.where(finite, magnitude, inf).min(),
                torch.where(finite, magnitude, -inf).max(),
                real,
                imag,
            ]
        )
        return _Totals(
            finite=int(finite_n),
            total=complex(real_sum, imag_sum),
            sumsq=sumsq,
            low=low,
            high=high,
            nan=int(nan_n),
            posinf=int(inf_n),
        )

    def _centred(self, chunks: list[Any], mean: float) -> float:
        """Σ(x - mean)² over the finite elements, in float64, one bounded chunk at a time."""
        torch = self.torch
        parts = []
        for c in chunks:
            d = c.double() - mean
            if c.is_floating_point():
                d = torch.where(torch.isfinite(d), d, 0)
            parts.append(_square_sum(torch, d))
        (centred,) = self._fetch([torch.stack(parts).sum()])
        return float(centred)

    def _int(self, chunks: list[Any], pieces: Callable[[], list[Any]]) -> _Totals:
        torch = self.torch
        sums, lows, highs, squares = [], [], [], []
        for c in chunks:
            d = c.double()
            sums.append(d.sum())
            squares.append(_square_sum(torch, d))
            lows.append(d.min())
            highs.append(d.max())
        total, low, high, sumsq = self._fetch(
            [torch.stack(sums).sum(), torch.stack(lows).min(), torch.stack(highs).max(), torch.stack(squares).sum()]
        )
        n = sum(int(c.numel()) for c in chunks)
        totals = _Totals(finite=n, total=total, sumsq=sumsq, low=low, high=high)
        if _needs_centring(totals):
            totals.centred = self._centred(pieces(), total / n)
        return totals

    def _bool(self, chunks: list[Any]) -> _Totals:
        torch = self.torch
        (true_count,) = self._fetch([torch.stack([c.sum() for c in chunks]).sum()])
        n = sum(int(c.numel()) for c in chunks)
        true_count = int(true_count)
        return _Totals(
            finite=n,
            total=true_count,
            sumsq=true_count,
            low=0.0 if true_count < n else 1.0,
            high=1.0 if true_count > 0 else 0.0,
        )


def _why_no_data(torch: Any, t: Any) -> str | None:
    """Tensors that carry metadata but no readable values (tracing and transforms), said plainly."""
    fake = getattr(sys.modules.get("torch._subclasses.fake_tensor"), "FakeTensor", None)
    if isinstance(fake, type) and isinstance(t, fake):
        return "fake tensor: shape only, no data"
    functorch = getattr(torch._C, "_functorch", None)
    is_batched = getattr(functorch, "is_batchedtensor", None)
    if is_batched is not None and is_batched(t):
        return "vmap batched tensor: values are per example, not computed"
    return None


def _torch_kind(torch: Any, t: Any) -> str:
    if t.is_quantized:
        return "float"
    if t.dtype == torch.bool:
        return "bool"
    if t.is_complex():
        return "complex"
    if t.is_floating_point():
        return "float"
    return "int"


def _unexpand(t: Any) -> tuple[Any, int]:
    """Drop the repeats of expanded (stride-0) dimensions: the same values, read once, and how many times each."""
    repeats = 1
    base = t
    for dim in range(t.dim()):
        if t.stride(dim) == 0 and t.shape[dim] > 1:
            base = base.narrow(dim, 0, 1)
            repeats *= int(t.shape[dim])
    return base, repeats


def _torch_flat(t: Any) -> Any | None:
    """A flat view of a dense tensor (any dimension order, e.g. transposed or channels-last), or None."""
    if t.is_contiguous():
        return t.view(-1)
    order = sorted(range(t.dim()), key=lambda d: (-t.stride(d), -t.shape[d]))
    permuted = t.permute(order)
    return permuted.view(-1) if permuted.is_contiguous() else None


def _torch_sample(torch: Any, t: Any, target: int) -> Any:
    """A deterministic strided view of about ``target`` elements (no RNG, no copy)."""
    flat = _torch_flat(t)
    if flat is not None:
        last = int(t.shape[-1]) if t.dim() else 1
        return flat[:: _sample_step(flat.numel(), target, last)]
    index = tuple(slice(None, None, step) for step in _dim_steps(tuple(t.shape), target))
    return t[index]


def _torch_chunks(torch: Any, t: Any, chunk: int, dequantize: bool) -> Iterator[Any]:
    """1-D contiguous pieces of ``t`` of at most ``chunk`` elements, in a dtype the reductions handle well.

    Views where the layout allows; otherwise copies of one chunk at most. Half precision becomes float32, small
    complex becomes complex64, quantized values are dequantized, one chunk at a time.
    """
    for block in _torch_blocks(t, chunk):
        if dequantize:
            block = block.dequantize()
        flat = block.contiguous().view(-1)
        if flat.is_floating_point() and flat.element_size() < 4:
            flat = flat.float()
        elif flat.is_complex() and flat.element_size() < 8:
            flat = flat.to(torch.complex64)
        yield flat


def _torch_blocks(t: Any, chunk: int) -> Iterator[Any]:
    flat = None if t.is_quantized else _torch_flat(t)
    if flat is not None:
        for start in range(0, flat.numel(), chunk):
            yield flat[start : start + chunk]
        return
    if t.numel() <= chunk or t.dim() == 0:
        yield t
        return
    if t.dim() == 1:
        for start in range(0, t.shape[0], chunk):
            yield t[start : start + chunk]
        return
    per_row = max(1, t[0].numel())
    if per_row > chunk:
        for row in range(t.shape[0]):
            yield from _torch_blocks(t[row], chunk)
        return
    rows = max(1, chunk // per_row)
    for start in range(0, t.shape[0], rows):
        yield t[start : start + rows]


def _square_sum(torch: Any, c: Any) -> Any:
    """Σ|x|² of a float64 (or complex128) chunk. ``vector_norm`` rather than ``dot``: BLAS calls bring MKL's own
    spinning thread pool, which then starves torch's next parallel kernel (measured: 100× slower on 2 busy cores)."""
    return torch.linalg.vector_norm(c).square()


MAX_RANGE_RUNS = 64  # a chunk with more runs of clean rows than this gets its range row by row (two reductions)


def _add(totals: _Totals, part: _Totals) -> None:
    """Fold the figures of one part of a tensor into the running totals."""
    totals.finite += part.finite
    totals.total += part.total
    totals.sumsq += part.sumsq
    totals.low = min(totals.low, part.low)
    totals.high = max(totals.high, part.high)
    totals.nan += part.nan
    totals.posinf += part.posinf
    totals.neginf += part.neginf


def _magnitudes(c: Any) -> Any:
    """The values whose range a line shows: the chunk itself, or ``|z|`` of a complex chunk."""
    return c.abs() if c.is_complex() else c


def _row_sums(torch: Any, c: Any, squares: bool = True) -> tuple[Any, Any]:
    """Per-row Σx and Σ|x|² of a 1-D contiguous float or complex chunk, in float64 (a row: ROW_ELEMENTS floats).

    The sums are float32 within a row and float64 across rows; Σ|x|² comes from a row-wise ``vector_norm``. A
    complex chunk is read through its real view: rows of ROW_ELEMENTS / 2 elements, and Σz as (real, imaginary)
    pairs. The last, partial row (the tail) is reduced in float64. A row whose sum or norm is not finite holds a
    NaN/Inf (or values whose squares overflow): this is how ``_repair`` finds them. ``squares=False`` (one pass:
    ``StatsBudget.spread``) leaves Σ|x|² out and returns None for it.
    """
    is_complex = c.is_complex()
    flat = torch.view_as_real(c).reshape(-1) if is_complex else c
    n = int(flat.numel())
    whole = (n // ROW_ELEMENTS) * ROW_ELEMENTS
    sums_parts, square_parts = [], []
    if whole:
        rows = flat[:whole].view(-1, ROW_ELEMENTS)
        sums = rows.view(-1, ROW_ELEMENTS // 2, 2).sum(1) if is_complex else rows.sum(1)
        sums_parts.append(sums.double())
        if squares:
            square_parts.append(torch.linalg.vector_norm(rows, dim=1).double().square())
    if whole < n:
        tail = flat[whole:].double()
        sums_parts.append(tail.view(-1, 2).sum(0, keepdim=True) if is_complex else tail.sum().reshape(1))
        if squares:
            square_parts.append(_square_sum(torch, tail).reshape(1))
    joined_squares = (square_parts[0] if len(square_parts) == 1 else torch.cat(square_parts)) if squares else None
    return (sums_parts[0] if len(sums_parts) == 1 else torch.cat(sums_parts)), joined_squares


def _good_range(torch: Any, values: Any, per_row: int, good: Any, bad: list[int]) -> tuple[Any, Any]:
    """Min and max of ``values`` over the rows marked ``good`` (as 0-d tensors; +Inf/-Inf when there are none)."""
    n = int(values.numel())
    rows = (n + per_row - 1) // per_row
    runs, start = [], 0
    for index in [*bad, rows]:
        if index > start:
            runs.append((start * per_row, min(index * per_row, n)))
        start = index + 1
    inf = torch.full((), math.inf, dtype=values.dtype, device=values.device)  # filled there: no host copy, no sync
    if not runs:
        return inf, -inf
    if len(runs) <= MAX_RANGE_RUNS:
        pairs = [torch.aminmax(values[a:b]) for a, b in runs]
        return torch.stack([p[0] for p in pairs]).min(), torch.stack([p[1] for p in pairs]).max()
    whole = (n // per_row) * per_row
    lows = [values[:whole].view(-1, per_row).amin(1)] if whole else []
    highs = [values[:whole].view(-1, per_row).amax(1)] if whole else []
    if whole < n:
        lows.append(values[whole:].amin().reshape(1))
        highs.append(values[whole:].amax().reshape(1))
    return torch.where(good, torch.cat(lows), inf).min(), torch.where(good, torch.cat(highs), -inf).max()


# ---- numpy ---------------------------------------------------------------------------------------------------------


def array_stats(a: Any, budget: StatsBudget = DEFAULT_BUDGET, *, zeros: bool = False) -> Stats:
    """Stats of a numpy array (memmap and other subclasses read as plain arrays); float64 accumulation."""
    import numpy as np

    a = np.asarray(a)
    numel = int(a.size)
    kind = _numpy_kind(a.dtype)
    if kind == "none":
        return unavailable(numel, _numpy_why_not(a.dtype))
    if numel == 0:
        return Stats(numel=0, kind=kind, nan=0, posinf=0, neginf=0, zeros=0 if zeros else None)
    base, repeats = _np_unexpand(a)
    exact = base.size <= budget.exact_elements
    target = base if exact else _np_sample(base, budget.sample_elements)
    factor = repeats * (base.size / target.size)
    totals = _Totals(zeros=0 if zeros else None)
    with np.errstate(all="ignore"):
        chunks = _np_chunks(np, target, budget.chunk_elements)
        for chunk in chunks:
            _np_accumulate(np, chunk, kind, totals)
        if kind in ("float", "int") and _needs_centring(totals):
            mean = float(totals.total.real) / totals.finite
            centred = 0.0
            for chunk in _np_chunks(np, target, budget.chunk_elements):
                d = chunk.astype(np.float64)
                d = d[np.isfinite(d)] - mean
                centred += _np_square_sum(np, d)
            totals.centred = centred
    return totals.finish(numel, kind, factor, exact, inf_signed=kind != "complex")


def _numpy_kind(dtype: Any) -> str:
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


def _np_unexpand(a: Any) -> tuple[Any, int]:
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


def _np_sample(a: Any, target: int) -> Any:
    flat = _np_flat(a)
    if flat is not None:
        last = int(a.shape[-1]) if a.ndim else 1
        return flat[:: _sample_step(flat.size, target, last)]
    return a[tuple(slice(None, None, step) for step in _dim_steps(tuple(a.shape), target))]


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


def _np_accumulate(np: Any, chunk: Any, kind: str, totals: _Totals) -> None:
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
        totals.nan += int(nan.sum())
        totals.posinf += int((np.isinf(z) & ~nan).sum())
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
    finite = np.isfinite(d)
    totals.nan += int(np.isnan(d).sum())
    totals.posinf += int(np.isposinf(d).sum())
    totals.neginf += int(np.isneginf(d).sum())
    kept = d[finite]
    totals.finite += int(kept.size)
    if kept.size:
        totals.total += float(kept.sum())
        totals.sumsq += _np_square_sum(np, kept)
        totals.low = min(totals.low, float(kept.min()))
        totals.high = max(totals.high, float(kept.max()))


# ---- cache ---------------------------------------------------------------------------------------------------------


class StatsCache:
    """Stats of live tensors, reused until the tensor changes.

    An entry belongs to one tensor object (checked through a weak reference, so a freed tensor whose memory is
    reused cannot inherit its stats) and is valid while its ``_version`` (bumped by every in-place write), shape,
    strides, storage offset, data pointer, dtype and device are unchanged. Exact figures serve any budget; an
    estimate serves only the budget it was made under. numpy arrays carry no version counter, so they are always
    recomputed. Thread-safe; holds ``capacity`` entries, least recently used out first; ``reserve`` grows it to
    what is in view (a module with 10,000 parameters), up to ``MAX_CAPACITY``.
    """

    MAX_CAPACITY = 1 << 18  # entries are a weak reference and a few figures: about 100 MB at most

    def __init__(self, capacity: int = 512) -> None:
        self.capacity = capacity
        self._entries: dict[int, tuple[weakref.ref[Any], tuple[Any, ...], StatsBudget, Stats]] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def stats(self, value: Any, budget: StatsBudget = DEFAULT_BUDGET, *, zeros: bool = False) -> Stats | None:
        key = _version_key(value)
        if key is None:
            return compute_stats(value, budget, zeros=zeros)
        cached = self._lookup(value, key, budget)
        if cached is not None and (not zeros or cached.zeros is not None or not cached.has_values):
            self.hits += 1
            return cached
        self.misses += 1
        result = compute_stats(value, budget, zeros=zeros)
        if result is None:
            return None
        if cached is not None and cached.zeros is None and result.zeros is not None and cached.exact:
            result = replace(cached, zeros=result.zeros)
        self._store(id(value), value, key, budget, result)
        return result

    def cached(self, value: Any, budget: StatsBudget = DEFAULT_BUDGET) -> Stats | None:
        """The stats this cache holds for ``value`` (valid under ``budget``), computing nothing; None if none."""
        key = _version_key(value)
        return None if key is None else self._lookup(value, key, budget)

    def reserve(self, entries: int) -> None:
        """Make room for ``entries`` more live tensors than the default capacity (never shrinks)."""
        with self._lock:
            self.capacity = min(self.MAX_CAPACITY, max(self.capacity, entries))

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def _lookup(self, value: Any, key: tuple[Any, ...], budget: StatsBudget) -> Stats | None:
        ident = id(value)
        with self._lock:
            entry = self._entries.get(ident)
            if entry is None or entry[0]() is not value or entry[1] != key:
                return None
            stats = entry[3]
            if not ((stats.exact and (stats.complete or not budget.spread)) or entry[2] == budget):
                return None  # an estimate serves its own budget only; one-pass figures only a one-pass request
            self._entries[ident] = self._entries.pop(ident)  # most recently used goes last
            return entry[3]

    def _store(self, ident: int, value: Any, key: tuple[Any, ...], budget: StatsBudget, result: Stats) -> None:
        entries = self._entries

        def forget(ref: weakref.ref[Any], ident: int = ident) -> None:
            with self._lock:
                current = entries.get(ident)
                if current is not None and current[0] is ref:
                    del entries[ident]

        try:
            ref = weakref.ref(value, forget)
        except TypeError:
            return
        with self._lock:
            entries.pop(ident, None)
            entries[ident] = (ref, key, budget, result)
            while len(entries) > self.capacity:
                del entries[next(iter(entries))]


def _version_key(value: Any) -> tuple[Any, ...] | None:
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(value, torch.Tensor):
        return None
    try:
        with plain_tensors(torch):
            return _tensor_key(torch, value)
    except Exception:  # noqa: BLE001 - exotic subclasses: no caching, never a failure
        return None


def _tensor_key(torch: Any, value: Any) -> tuple[Any, ...] | None:
    if value.layout != torch.strided or value.is_nested:
        return None
    return (
        value._version,
        tuple(value.shape),
        tuple(value.stride()),
        value.storage_offset(),
        value.data_ptr(),
        value.dtype,
        str(value.device),
    )
