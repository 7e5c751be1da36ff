"""Training loaders that read their samples grouped by label, in stored order: no shuffle over sorted data.

Called by the leakage watch (``agent.leakage.watch.check_scopes``) with the loaders it found in the user's scopes at
the first optimizer step. A ``DataLoader`` whose sampler is torch's ``SequentialSampler`` (``shuffle`` left False)
reads its dataset in the order it is stored. When that dataset's labels are grouped (every class in one run:
``0 0 ... 0 1 1 ... 1``, data read folder by folder or sorted by label; or any other one-value-per-sample array it
stores, such as a length) or sorted (a regression target in increasing order), each batch holds one class or one
narrow range of targets, and every epoch walks the model from one to the next: the loss curve swings and the model
ends biased towards the last group. The evidence is the labels the loader's dataset stores, read without running
user code (``agent.leakage.splits.describe``); the finding is a ``training-logic`` warning at the line that builds
the loader.

Runs nothing of the user's: types and attributes are read statically, labels as numpy views.
"""

from __future__ import annotations

from typing import Any

from tensorsight.agent.leakage.splits import MISSING, describe, has_static, static_attribute
from tensorsight.core.l10n import t

MIN_SAMPLES = 32
MAX_CLASSES_SHARE = 0.1  # at most this share of distinct values per sample for labels to be classes


def is_loader(value: Any) -> bool:
    """A ``DataLoader``-like object: a stored ``dataset``, ``batch_size`` and ``sampler`` (read statically)."""
    return (
        static_attribute(value, "dataset") is not MISSING
        and has_static(value, "batch_size")
        and has_static(value, "sampler")
    )


def _sequential(loader: Any) -> bool:
    sampler = static_attribute(loader, "sampler")
    kind = type(sampler)
    return kind.__name__ == "SequentialSampler" and str(kind.__module__).startswith("torch.")


def grouped_labels(labels: Any) -> tuple[str, int] | None:
    """``("grouped", classes)`` when class labels come in one run per class, ``("sorted", 0)`` when continuous
    targets are in increasing or decreasing order; None otherwise (or when there are too few samples)."""
    import numpy as np

    values = np.asarray(labels)
    if values.ndim > 1 and values.size == len(values):
        values = values.reshape(-1)
    if values.ndim != 1 or len(values) < MIN_SAMPLES or values.dtype.kind not in "biuf":
        return None
    if not np.isfinite(values.astype(np.float64)).all():
        return None
    distinct = np.unique(values)
    if len(distinct) < 2:
        return None
    if len(distinct) <= max(2, MAX_CLASSES_SHARE * len(values)):
        changes = int(np.count_nonzero(values[1:] != values[:-1]))
        return ("grouped", len(distinct)) if changes == len(distinct) - 1 else None
    steps = np.diff(values.astype(np.float64))
    return ("sorted", 0) if bool((steps >= 0).all() or (steps <= 0).all()) else None


def unshuffled_grouped(name: str, loader: Any) -> tuple[str, dict[str, Any]] | None:
    """``(message, details)`` when ``loader`` reads, in stored order, a dataset whose labels are grouped or sorted."""
    if not is_loader(loader) or not _sequential(loader):
        return None
    dataset = static_attribute(loader, "dataset")
    split = describe(dataset, name)
    if split is None:
        return None
    found = None
    for column in _per_sample_columns(split):
        found = grouped_labels(column)
        if found is not None:
            break
    if found is None:
        return None
    how, classes = found
    first, last = column.reshape(-1)[0], column.reshape(-1)[-1]
    count = len(column)
    if how == "grouped":
        message = t(
            "{loader} reads its {count} samples in stored order (no shuffle) and their labels are grouped by class "
            "({classes} classes in {classes} runs: label {first} first, label {last} last): each batch holds one "
            "class and every epoch walks the model from one class to the next; pass shuffle=True to the training "
            "DataLoader (or a RandomSampler)",
            loader=name,
            count=count,
            classes=classes,
            first=_shown(first),
            last=_shown(last),
        )
    else:
        message = t(
            "{loader} reads its {count} samples in stored order (no shuffle) and their targets are sorted (from "
            "{first} to {last}): each batch covers one narrow range of targets and every epoch walks the model "
            "across them; pass shuffle=True to the training DataLoader (or a RandomSampler)",
            loader=name,
            count=count,
            first=_shown(first),
            last=_shown(last),
        )
    details = {"check": "unshuffled-grouped-labels", "order": how, "classes": classes, "samples": count}
    return message, details


def _per_sample_columns(split: Any) -> list[Any]:
    """The one-value-per-sample arrays of a dataset besides its inputs: its labels, then the other parts of its
    samples (a ``TensorDataset``'s later tensors, a custom ``Dataset``'s per-sample arrays such as a class flag or
    a length)."""
    import numpy as np

    columns = [] if split.labels is None else [np.asarray(split.labels)]
    rows = None if split.rows is None else np.asarray(split.rows)
    for part in split.parts or ():
        array = np.asarray(part)
        if array.ndim == 0 or array.size != len(array):
            continue
        if rows is not None and rows.shape == array.shape and np.array_equal(rows, array):
            continue  # the inputs themselves (a one-feature dataset): their order is no label's
        if not any(c.shape == array.shape and np.array_equal(c, array) for c in columns):
            columns.append(array)
    return columns


def _shown(value: Any) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return str(int(number)) if number.is_integer() else f"{number:.4g}"
