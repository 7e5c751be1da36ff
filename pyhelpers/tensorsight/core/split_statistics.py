"""Normalization statistics computed over every split: the evidence in the standardized arrays themselves.

Called by the leakage watch (``agent.leakage.watch``) on the features of the splits a script builds (``SplitData.rows``
of the training split and of the held-out ones), once they exist. Standardizing with statistics of the training rows
leaves the training rows with mean 0 and std 1 in every standardized column (to float precision) and the held-out rows
near, not at, those values. Standardizing with statistics of all rows before the split leaves the *union* of the
splits at mean 0 and std 1 exactly, and the training rows alone off it by the held-out rows' share: that pattern, per
column or over the whole array, is what :func:`statistics_over_all_splits` looks for. Neither a split standardized on
its own statistics (each split, so also the training one, at 0 and 1) nor raw data (the union not at 0 and 1) fits it.

Pure: numpy arrays in, a ``LeakageIssue`` or None out; float64 sums, block by block, over at most ``MAX_ELEMENTS``
values in all (the evidence is exact equality, so a row sample would not do: larger splits are not checked).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tensorsight.core.l10n import t
from tensorsight.core.leakage import LeakageIssue, SplitData

MAX_ELEMENTS = 100_000_000  # values over all splits; beyond that the check is skipped (a row sample is not exact)
CHUNK_ELEMENTS = 1 << 20
MAX_COLUMNS = 4096
MIN_ROWS = 20
UNION_MEAN_TOLERANCE = 1e-4  # |mean| of a column standardized over the union (float32 rounding is ~1e-7)
UNION_STD_TOLERANCE = 1e-3  # |std - 1|, or the ddof=1 std's 1/(2n) shift when larger
TRAIN_DEVIATION = 1e-3  # the training rows' own |mean| (or |std - 1|) that shows the statistics were not theirs


def _moments(array: Any) -> tuple[Any, Any, int]:
    """Per-column sum and sum of squares (float64) and the row count of a ``[N, ...]`` array, as ``[N, C]``, summed
    a block of rows at a time so the float64 temporaries stay small."""
    import numpy as np

    flat = np.asarray(array).reshape(len(array), -1)
    block = max(1, CHUNK_ELEMENTS // max(1, flat.shape[1]))
    total = np.zeros(flat.shape[1], dtype=np.float64)
    squares = np.zeros(flat.shape[1], dtype=np.float64)
    for start in range(0, len(flat), block):
        part = flat[start : start + block].astype(np.float64)
        total += part.sum(axis=0)
        squares += np.square(part).sum(axis=0)
    return total, squares, len(flat)


def statistics_over_all_splits(train: SplitData, held_out: Sequence[SplitData]) -> LeakageIssue | None:
    """Whether ``train``'s features and the held-out splits' were standardized with statistics of all their rows
    together (see the module docstring); the issue names the training split and its evidence."""
    import numpy as np

    arrays = [split.rows for split in (train, *held_out)]
    if any(a is None for a in arrays) or not held_out:
        return None
    arrays = [np.asarray(a) for a in arrays]
    if any(a.dtype.kind != "f" or a.ndim == 0 or len(a) < MIN_ROWS for a in arrays):
        return None
    width = int(np.prod(arrays[0].shape[1:], dtype=np.int64))
    if width == 0 or width > MAX_COLUMNS or any(a.shape[1:] != arrays[0].shape[1:] for a in arrays):
        return None
    if sum(a.size for a in arrays) > MAX_ELEMENTS:
        return None
    with np.errstate(all="ignore"):
        sums = [_moments(a) for a in arrays]
        n = sum(count for _, _, count in sums)
        total = sum(s for s, _, _ in sums)
        squares = sum(q for _, q, _ in sums)
        train_sum, train_squares, n_train = sums[0]
        candidates = [
            # per column, then over the whole array (one scalar mean and std for all values, as images often are)
            (total / n, squares / n, train_sum / n_train, train_squares / n_train),
            (
                np.array([total.sum() / (n * width)]),
                np.array([squares.sum() / (n * width)]),
                np.array([train_sum.sum() / (n_train * width)]),
                np.array([train_squares.sum() / (n_train * width)]),
            ),
        ]
        std_tolerance = max(UNION_STD_TOLERANCE, 1.0 / n)
        for mean, square, train_mean, train_square in candidates:
            if not (np.isfinite(mean).all() and np.isfinite(square).all()):
                continue
            std = np.sqrt(np.maximum(square - mean**2, 0.0))
            standardized = (np.abs(mean) <= UNION_MEAN_TOLERANCE) & (np.abs(std - 1.0) <= std_tolerance)
            if not standardized.any() or standardized.sum() < max(1, standardized.size // 2):
                continue
            train_std = np.sqrt(np.maximum(train_square - train_mean**2, 0.0))
            deviation = np.maximum(np.abs(train_mean), np.abs(train_std - 1.0))[standardized]
            if float(deviation.max()) < TRAIN_DEVIATION:
                return None  # the training rows are at 0 and 1 themselves: their own statistics
            column = int(np.argmax(np.where(standardized, np.abs(train_mean), -1.0)))
            names = ", ".join(split.name for split in held_out)
            message = t(
                "{train} and {held} together have mean 0 and std 1 in {columns} of {width} standardized values, "
                "{train} alone does not (mean {mean} and std {std} in column {column}): the normalization "
                "statistics were computed over all rows, held-out rows included, so the held-out score is not a "
                "held-out score; compute the mean and std on {train} only, after the split, and apply them to "
                "every split",
                train=train.name,
                held=names,
                columns=int(standardized.sum()),
                width=int(standardized.size),
                mean=f"{float(train_mean[column]):+.4f}",
                std=f"{float(train_std[column]):.4f}",
                column=column,
            )
            return LeakageIssue(
                "statistics-over-all-splits",
                "warning",
                message,
                (*(split.name for split in held_out), train.name),
                int(standardized.sum()),
                int(standardized.size),
                (float(train_mean[column]), float(train_std[column])),
            )
    return None
