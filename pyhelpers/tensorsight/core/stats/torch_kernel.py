"""The reductions behind the statistics of a torch tensor of any layout, dtype and device (``tensor_stats``).

Called by ``dispatch.compute_stats`` (and through it by ``cache``); the viewer and tests call ``tensor_stats``
directly. Reads memory through ``torch_layout``; accumulates :class:`~tensorsight.core.stats.figures.Totals`.

Exact by default, and fast enough to be: a dense float32 tensor costs three reductions (row-wise ``sum`` and
``vector_norm`` over rows of ROW_ELEMENTS, whose per-row results are added in float64, and ``aminmax``), with no
temporary beyond two floats per 4096 elements. On the CPU they run a cache tile at a time (CACHE_TILE_BYTES), so
memory is read about once: about 2.6 ``sum`` passes. Other dtypes and layouts go through chunks of
``chunk_elements`` (converted or copied one chunk at a time); complex values through their real view. A finite row
sum proves that no element of the row is NaN or Inf; on the CPU the range is taken after the sums, over the clean
rows only, and only the bad rows are copied and counted element by element: exact NaN/+Inf/-Inf counts, kept out of
the figures, at the three passes of a clean tensor when they are few (a tensor full of them pays per bad element, in
bounded chunks). Expanded dimensions (stride 0) are reduced once and counted as repeats, so a huge ``expand`` stays
exact and cheap. On CUDA the reductions stay on the device and the results come back in one transfer (a few more
only when the tensor holds NaN/Inf). Runs under ``no_grad`` and ``plain_tensors``: no autograd history, no
``_version`` bump, no subclass code.
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tensorsight.core.stats.figures import (
    DEFAULT_BUDGET,
    Stats,
    StatsBudget,
    Totals,
    add_totals,
    needs_centring,
    unavailable,
)
from tensorsight.core.stats.torch_layout import (
    SPARSE_COMPRESSED,
    flat_view,
    plain_tensors,
    sample_view,
    torch_chunks,
    torch_kind,
    unexpand,
    why_no_data,
)
from tensorsight.core.stats.torch_nonfinite import repair
from tensorsight.core.stats.torch_rows import ROW_ELEMENTS, magnitudes, row_sums, square_sum

CACHE_TILE_BYTES = 8 << 20  # CPU summaries read dense data in tiles this big, which stay in a last-level cache
# between the passes (measured on 1e8 float32 values: 2.3 passes' time for three passes instead of 3)
SLOW_TILE_SECONDS = 2e-3  # three reductions of one such tile take ~0.5 ms on an idle CPU; slower means threads
# held up by other work, and the rest of the tensor goes in one span (a few large kernels instead of many small)


def tensor_stats(t: Any, budget: StatsBudget = DEFAULT_BUDGET, *, zeros: bool = False) -> Stats:
    """Stats of a torch tensor of any layout, dtype and device (see the module docstring for the cost)."""
    import torch

    with torch.no_grad(), plain_tensors(torch):
        return _TorchStats(torch, budget, zeros).of(t)


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
        without_data = why_no_data(self.torch, t)
        if without_data:
            return unavailable(numel, without_data)
        layout = str(t.layout).replace("torch.", "").lstrip("_")
        if layout == "sparse_coo":
            values = t._values() if t.is_coalesced() else t.detach().coalesce()._values()
            return self._with_implicit_zeros(values.detach(), numel)
        if layout in SPARSE_COMPRESSED:
            return self._with_implicit_zeros(t.values().detach(), numel)
        if layout != "strided":
            return unavailable(numel, f"{layout} layout: values not read")
        if t.is_quantized:
            return self._dense(t.detach(), numel, dequantize=True)
        return self._dense(t.detach(), numel)

    # -- dense --------------------------------------------------------------------------------------------------------

    def _dense(self, t: Any, numel: int, dequantize: bool = False) -> Stats:
        kind = torch_kind(self.torch, t)
        if numel == 0:
            return Stats(numel=0, kind=kind, nan=0, posinf=0, neginf=0, zeros=0 if self.want_zeros else None)
        base, repeats = unexpand(t)
        exact = base.numel() <= self.budget.exact_elements
        target = base if exact else sample_view(self.torch, base, self.budget.sample_elements)
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
        totals = Totals(
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

    def _reduce(self, t: Any, kind: str, dequantize: bool) -> Totals:
        torch = self.torch

        def pieces() -> list[Any]:
            return list(torch_chunks(torch, t, self.budget.chunk_elements, dequantize))

        flat = flat_view(t) if kind == "float" and not dequantize else None
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

    def _float(self, chunks: list[Any], pieces: Callable[[], list[Any]], tiled: bool = False) -> Totals:
        """Float and complex chunks: three reductions each (per-row Σ and Σ|x|², and the range), one chunk after the
        other, all brought back in one transfer.

        Only a chunk whose figures are not finite is read again, and within it only the rows of ROW_ELEMENTS whose
        own sums are not finite are counted element by element (see ``_repair``), so one NaN in 1e8 values costs
        one chunk's passes more than none. ``tiled``: one dense CPU chunk, whose whole rows go through
        ``_tiled_rows`` and only the last, partial row through the chunk path.
        """
        totals = Totals()
        is_complex = bool(chunks) and chunks[0].is_complex()
        if tiled:
            (flat,) = chunks
            whole = int(flat.numel()) // ROW_ELEMENTS * ROW_ELEMENTS
            if whole:
                add_totals(totals, self._tiled_rows(flat[:whole].view(-1, ROW_ELEMENTS)))
            chunks = [flat[whole:]] if whole < flat.numel() else []
        add_totals(totals, self._chunk_totals(chunks))
        if not self.budget.spread:
            totals.complete = False
        elif not is_complex and needs_centring(totals):
            totals.centred = self._centred(pieces(), float(totals.total.real) / totals.finite)
        return totals

    def _tiled_rows(self, rows: Any) -> Totals:
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
        sums_by_row, squares_by_row = sums.double(), norms.double().square()
        total, sumsq, low, high = self._fetch([sums_by_row.sum(), squares_by_row.sum(), lows.min(), highs.max()])
        if all(math.isfinite(v) for v in (total, sumsq, low, high)):
            return Totals(finite=count * ROW_ELEMENTS, total=total, sumsq=sumsq, low=low, high=high)
        span_ok = [bool(v) for v in (torch.isfinite(lows) & torch.isfinite(highs)).tolist()]
        finite_rows = torch.isfinite(sums_by_row) & torch.isfinite(squares_by_row)
        for row in (~finite_rows).nonzero().view(-1).tolist():
            span_ok[bisect.bisect_right(spans, (row, count)) - 1] = False
        good_rows = torch.ones(count, dtype=torch.bool)
        for (a, b), ok in zip(spans, span_ok, strict=True):
            if not ok:
                good_rows[a:b] = False
        good_spans = torch.tensor(span_ok)
        total, sumsq, low, high = self._fetch(
            [
                torch.where(good_rows, sums_by_row, 0).sum(),
                torch.where(good_rows, squares_by_row, 0).sum(),
                torch.where(good_spans, lows, math.inf).min(),
                torch.where(good_spans, highs, -math.inf).max(),
            ]
        )
        good_elements = sum(b - a for (a, b), ok in zip(spans, span_ok, strict=True) if ok) * ROW_ELEMENTS
        totals = Totals(finite=good_elements, total=total, sumsq=sumsq, low=low, high=high)
        for (a, b), ok in zip(spans, span_ok, strict=True):
            if not ok:
                add_totals(totals, self._repair(rows[a:b].reshape(-1), sums_by_row[a:b], squares_by_row[a:b]))
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

    def _chunk_totals(self, chunks: list[Any]) -> Totals:
        """The figures of float or complex chunks, each reduced whole (see ``_float``)."""
        torch = self.torch
        spread = self.budget.spread
        is_complex = bool(chunks) and chunks[0].is_complex()
        width = 2 if is_complex else 1
        per_chunk = width + 3 if spread else width
        rows, values = [], []
        for c in chunks:
            sums, squares = row_sums(torch, c, squares=spread)
            rows.append((sums, squares))
            values += [*sums.sum(0).reshape(-1)]
            if spread:
                values += [squares.sum(), *torch.aminmax(magnitudes(c))]
        fetched = self._fetch(values) if values else []
        totals = Totals()
        for index, c in enumerate(chunks):
            figures = fetched[index * per_chunk : (index + 1) * per_chunk]
            if not all(math.isfinite(v) for v in figures):
                add_totals(totals, self._repair(c, *rows[index]))
                continue
            total: float | complex = complex(figures[0], figures[1]) if is_complex else figures[0]
            sumsq, low, high = figures[width:] if spread else (0.0, math.inf, -math.inf)
            add_totals(totals, Totals(finite=int(c.numel()), total=total, sumsq=sumsq, low=low, high=high))
        return totals

    def _repair(self, c: Any, sums: Any, squares: Any) -> Totals:
        """Exact figures of a chunk whose figures are not finite (``torch_nonfinite.repair``)."""
        return repair(self.torch, c, sums, squares, self._fetch, self.budget.chunk_elements)

    def _centred(self, chunks: list[Any], mean: float) -> float:
        """Σ(x - mean)² over the finite elements, in float64, one bounded chunk at a time."""
        torch = self.torch
        parts = []
        for c in chunks:
            d = c.double() - mean
            if c.is_floating_point():
                d = torch.where(torch.isfinite(d), d, 0)
            parts.append(square_sum(torch, d))
        (centred,) = self._fetch([torch.stack(parts).sum()])
        return float(centred)

    def _int(self, chunks: list[Any], pieces: Callable[[], list[Any]]) -> Totals:
        torch = self.torch
        sums, lows, highs, squares = [], [], [], []
        for c in chunks:
            d = c.double()
            sums.append(d.sum())
            squares.append(square_sum(torch, d))
            lows.append(d.min())
            highs.append(d.max())
        total, low, high, sumsq = self._fetch(
            [torch.stack(sums).sum(), torch.stack(lows).min(), torch.stack(highs).max(), torch.stack(squares).sum()]
        )
        n = sum(int(c.numel()) for c in chunks)
        totals = Totals(finite=n, total=total, sumsq=sumsq, low=low, high=high)
        if needs_centring(totals):
            totals.centred = self._centred(pieces(), total / n)
        return totals

    def _bool(self, chunks: list[Any]) -> Totals:
        torch = self.torch
        (true_count,) = self._fetch([torch.stack([c.sum() for c in chunks]).sum()])
        n = sum(int(c.numel()) for c in chunks)
        true_count = int(true_count)
        return Totals(
            finite=n,
            total=true_count,
            sumsq=true_count,
            low=0.0 if true_count < n else 1.0,
            high=1.0 if true_count > 0 else 0.0,
        )
