"""Exact NaN/+Inf/-Inf counts, and the figures of the finite values, of torch float and complex data whose row sums
say it holds non-finite values (or finite values whose squares overflow float32).

Called by ``torch_kernel`` (``repair``) for each chunk or CPU tile whose figures are not finite. Only the bad rows
are read again, in place where they form runs, ``chunk_elements`` at a time. On the CPU the exact counts come from
float operations only (``careful_real``): a block that is all NaN stops at its count, a block whose ``nansum(|x|)`` is
finite holds no Inf and skips the Inf counts, and the finite figures come from one float64 copy. Buffers are of one
block at most, reused from block to block, never of the whole tensor; few large kernels rather than many small ones,
since each parallel kernel waits for every worker thread of a busy CPU. Elsewhere (an accelerator) each block
is counted in one transfer. Reads only: every write goes to a buffer of our own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

from tensorsight.core.stats.figures import Totals, add_totals
from tensorsight.core.stats.torch_rows import ROW_ELEMENTS, magnitudes, square_sum

Fetch = Callable[[list[Any]], list[Any]]  # the kernel's one device-to-host transfer of 0-d tensors, as floats

MAX_RANGE_RUNS = 64  # a chunk with more runs of clean rows than this gets its range row by row (two reductions)
MAX_BLOCK_ELEMENTS = 1 << 24  # counts added up in float32 stay exact below 2**24
MIN_VIEW_ROWS = 8  # runs of at least this many bad rows are read in place; shorter ones are copied together


def repair(torch: Any, c: Any, sums: Any, squares: Any, fetch: Fetch, chunk_elements: int) -> Totals:
    """Exact figures of a 1-D chunk holding NaN/Inf (or finite values whose squares overflow float32), given its
    per-row sums and squares (``torch_rows.row_sums``; ``squares`` None when σ and the range are not asked for).

    Rows with finite sums are all finite: their sums are already known, and their range takes one more reduction
    (over the runs between bad rows, or row by row when there are many runs). Only the bad rows are read again and
    counted element by element (``careful_real``, ``careful_complex``).
    """
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
        low, high = _good_range(torch, magnitudes(c), per_row, good, bad)
        square_total = torch.where(good, squares, 0).sum()
    else:  # one pass: no range, no Σ|x|² (the bad rows still get them below, and they are dropped at the end)
        low = high = square_total = torch.zeros((), dtype=torch.float64, device=c.device)
    # torch.where rather than boolean indexing, which costs milliseconds even on a few thousand rows
    good_sum = torch.where(good.view(-1, 1) if is_complex else good, sums, 0).sum(0).reshape(-1)
    fetched = fetch([*good_sum, square_total, low, high])
    width = 2 if is_complex else 1
    bad_elements = sum(min((i + 1) * per_row, n) - i * per_row for i in bad)
    totals = Totals(
        finite=n - bad_elements,
        total=complex(fetched[0], fetched[1]) if is_complex else fetched[0],
        sumsq=fetched[width],
        low=fetched[width + 1] if spread else math.inf,
        high=fetched[width + 2] if spread else -math.inf,
    )
    on_cpu = c.device.type == "cpu"
    piece = min(chunk_elements, MAX_BLOCK_ELEMENTS)
    scratch = Scratch(min(max(piece, per_row), bad_elements))
    for block in _bad_blocks(torch, c, bad, per_row, piece):
        if is_complex:
            add_totals(totals, careful_complex(torch, block, fetch))
        elif on_cpu:
            add_totals(totals, careful_real(torch, block, fetch, scratch))
        else:
            add_totals(totals, careful_real_one_transfer(torch, block, fetch))
    return totals


class Scratch:
    """Buffers of one block's size at most, made when first needed and reused by the blocks of one chunk: a new
    buffer per block would be paged in again every time."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._buffers: dict[tuple[str, Any], Any] = {}

    def get(self, torch: Any, name: str, like: Any, dtype: Any = None) -> Any:
        """Buffer ``name`` of ``dtype`` (``like``'s by default), cut to ``like``'s number of elements."""
        dtype = like.dtype if dtype is None else dtype
        buffer = self._buffers.get((name, dtype))
        if buffer is None:
            buffer = self._buffers[(name, dtype)] = torch.empty(self.size, dtype=dtype, device=like.device)
        return buffer[: like.numel()]


def _bad_blocks(torch: Any, c: Any, bad: list[int], per_row: int, piece: int) -> Iterator[Any]:
    """The bad rows of ``c`` as 1-D blocks of at most ``piece`` elements (or one row): runs of MIN_VIEW_ROWS rows
    or more as views of ``c`` (no copy), the rows of shorter runs copied together (one ``cat`` per block)."""
    n = int(c.numel())
    scattered: list[int] = []
    step = max(per_row, piece // per_row * per_row)
    for first, last in _runs(bad):
        if last - first + 1 < MIN_VIEW_ROWS:
            scattered.extend(range(first, last + 1))
            continue
        end = min((last + 1) * per_row, n)
        for start in range(first * per_row, end, step):
            yield c[start : min(start + step, end)]
    group = max(1, piece // per_row)
    for start in range(0, len(scattered), group):
        yield torch.cat([c[i * per_row : min((i + 1) * per_row, n)] for i in scattered[start : start + group]])


def _runs(rows: list[int]) -> Iterator[tuple[int, int]]:
    """Runs of consecutive row numbers in a sorted list, as (first, last) inclusive."""
    if not rows:
        return
    first = previous = rows[0]
    for row in rows[1:]:
        if row != previous + 1:
            yield first, previous
            first = row
        previous = row
    yield first, previous


def careful_real(torch: Any, block: Any, fetch: Fetch, scratch: Scratch) -> Totals:
    """NaN/+Inf/-Inf counts and figures over the finite values of a CPU float block, in few large kernels.

    Only float operations, which vectorise (a comparison that writes a bool mask costs six times more per element):
    ``x * 0`` is NaN exactly where ``x`` is not finite, so ``count_nonzero(x * 0)`` counts the non-finite elements.
    ``nansum(|x|)`` is finite exactly when there is no Inf (``nansum(x)`` is not a proof: partial sums of +Inf and
    -Inf make a NaN that it then drops). When there is one, ``w = nan_to_num(x * 0, nan=1) * nan_to_num(x, nan=0,
    posinf=1, neginf=-1)`` is +1 at +Inf, -1 at -Inf and 0 elsewhere: ``count_nonzero(w)`` and Σw (integers below
    2**24 add exactly in float32) give both signs' counts, and the rest are NaN. A block with no finite value stops
    there (an all-NaN tensor costs four kernels per block); the others get their figures from one float64 copy in
    which zeros stand for the non-finite values (``_finite_figures``). Every write goes to a ``scratch`` buffer.
    """
    n = int(block.numel())
    marks = scratch.get(torch, "marks", block)
    signs = scratch.get(torch, "signs", block)
    probe = torch.nansum(torch.abs(block, out=signs))  # +Inf when there is an Inf (or a huge finite sum)
    torch.mul(block, 0.0, out=marks)  # NaN where ``block`` is NaN or ±Inf, ±0 elsewhere
    counted = fetch([torch.count_nonzero(marks), probe])
    nonfinite = int(counted[0])
    posinf = neginf = 0
    if nonfinite and not math.isfinite(counted[1]):
        torch.nan_to_num(block, nan=0.0, posinf=1.0, neginf=-1.0, out=signs)
        signs.mul_(torch.nan_to_num(marks, nan=1.0, out=marks))
        infinite, difference = fetch([torch.count_nonzero(signs), signs.sum()])
        posinf, neginf = round((infinite + difference) / 2), round((infinite - difference) / 2)
    nan = nonfinite - posinf - neginf
    if nonfinite == n:
        return Totals(nan=nan, posinf=posinf, neginf=neginf)
    wide = scratch.get(torch, "wide", block, torch.float64)
    total, sumsq, low, high = _finite_figures(torch, block, wide, nonfinite > 0, fetch)
    return Totals(
        finite=n - nonfinite, total=total, sumsq=sumsq, low=low, high=high, nan=nan, posinf=posinf, neginf=neginf
    )


def _finite_figures(torch: Any, block: Any, wide: Any, replaced: bool, fetch: Fetch) -> tuple[float, ...]:
    """Σx, Σx² and the range of the finite elements of ``block`` (there is at least one), in float64 on the CPU;
    ``wide``: a float64 buffer of the block's size. ``replaced``: the block holds non-finite elements."""
    inf = math.inf
    wide.copy_(block)  # our own buffer: the block itself is never written
    if replaced:
        torch.nan_to_num(wide, nan=0.0, posinf=0.0, neginf=0.0, out=wide)
    low, high = torch.aminmax(wide)
    total, sumsq, low, high = fetch([wide.sum(), square_sum(torch, wide), low, high])
    if replaced:  # zeros stand in for the non-finite elements: a negative minimum (positive maximum) is a finite one
        if not low < 0:
            (low,) = fetch([torch.nan_to_num(block, nan=inf, posinf=inf, neginf=inf).amin()])
        if not high > 0:
            (high,) = fetch([torch.nan_to_num(block, nan=-inf, posinf=-inf, neginf=-inf).amax()])
    return total, sumsq, low, high


def careful_real_one_transfer(torch: Any, block: Any, fetch: Fetch) -> Totals:
    """NaN/+Inf/-Inf counts and figures over the finite values of a float block on an accelerator, in float64,
    brought back in one transfer (no decision on the host between the reductions)."""
    inf = math.inf
    kept = torch.nan_to_num(block, nan=0.0, posinf=0.0, neginf=0.0).double()  # a new tensor: never in place
    nan, posinf, neginf, finite_n, total, sumsq, low, high = fetch(
        [
            torch.count_nonzero(torch.isnan(block)),
            torch.count_nonzero(block == inf),
            torch.count_nonzero(block == -inf),
            torch.count_nonzero(torch.isfinite(block)),
            kept.sum(),
            square_sum(torch, kept),
            torch.nan_to_num(block, nan=inf, posinf=inf, neginf=inf).amin(),
            torch.nan_to_num(block, nan=-inf, posinf=-inf, neginf=-inf).amax(),
        ]
    )
    return Totals(
        finite=int(finite_n),
        total=total,
        sumsq=sumsq,
        low=low,
        high=high,
        nan=int(nan),
        posinf=int(posinf),
        neginf=int(neginf),
    )


def careful_complex(torch: Any, block: Any, fetch: Fetch) -> Totals:
    """NaN/Inf counts (an infinite part makes an Inf element) and figures over the finite values, complex128."""
    inf = math.inf
    finite = torch.isfinite(block)
    nan = torch.isnan(block)
    kept = torch.where(finite, block, 0).to(torch.complex128)
    magnitude = kept.abs()
    real, imag = torch.view_as_real(kept.sum())
    nan_n, inf_n, finite_n, sumsq, low, high, real_sum, imag_sum = fetch(
        [
            torch.count_nonzero(nan),
            torch.count_nonzero(torch.isinf(block) & ~nan),
            torch.count_nonzero(finite),
            torch.linalg.vector_norm(kept).square(),
            torch.where(finite, magnitude, inf).min(),
            torch.where(finite, magnitude, -inf).max(),
            real,
            imag,
        ]
    )
    return Totals(
        finite=int(finite_n),
        total=complex(real_sum, imag_sum),
        sumsq=sumsq,
        low=low,
        high=high,
        nan=int(nan_n),
        posinf=int(inf_n),
    )


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
