"""Row-wise reductions of flat torch float and complex data: per-row Σx and Σ|x|² (float32 within a row of
ROW_ELEMENTS values, float64 across rows), and Σ|x|² of a float64 chunk without BLAS.

Called by ``torch_kernel`` (the figures of a chunk, and the rows whose sums say they hold NaN/Inf) and by
``torch_nonfinite`` (the figures of the finite values of such rows). Pure: reads its input, returns new tensors.
"""

from __future__ import annotations

from typing import Any

ROW_ELEMENTS = 4096  # sums are taken per row of this many values (float32 rounding per row), then in float64;
# 1e8 elements make 24K rows: few enough that adding them up is a small single-threaded op


def square_sum(torch: Any, c: Any) -> Any:
    """Σ|x|² of a float64 (or complex128) chunk. ``vector_norm`` rather than ``dot``: BLAS calls bring MKL's own
    spinning thread pool, which then starves torch's next parallel kernel (measured: 100× slower on 2 busy cores)."""
    return torch.linalg.vector_norm(c).square()


def magnitudes(c: Any) -> Any:
    """The values whose range a line shows: the chunk itself, or ``|z|`` of a complex chunk."""
    return c.abs() if c.is_complex() else c


def row_sums(torch: Any, c: Any, squares: bool = True) -> tuple[Any, Any]:
    """Per-row Σx and Σ|x|² of a 1-D contiguous float or complex chunk, in float64 (a row: ROW_ELEMENTS floats).

    The sums are float32 within a row and float64 across rows; Σ|x|² comes from a row-wise ``vector_norm``. A
    complex chunk is read through its real view: rows of ROW_ELEMENTS / 2 elements, and Σz as (real, imaginary)
    pairs. The last, partial row (the tail) is reduced in float64. A row whose sum or norm is not finite holds a
    NaN/Inf (or values whose squares overflow): this is how ``torch_nonfinite.repair`` finds them.
    ``squares=False`` (one pass: ``StatsBudget.spread``) leaves Σ|x|² out and returns None for it.
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
            square_parts.append(square_sum(torch, tail).reshape(1))
    joined_squares = (square_parts[0] if len(square_parts) == 1 else torch.cat(square_parts)) if squares else None
    return (sums_parts[0] if len(sums_parts) == 1 else torch.cat(sums_parts)), joined_squares
