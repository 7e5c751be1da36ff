"""The entry points of the statistics that take any value: a torch tensor goes to ``torch_kernel``, a numpy array to
``numpy_kernel``, anything else gets None (or 0 elements to read).

Called by ``cache`` (``compute_stats``) and by the agent's display: ``reading`` (``elements_to_read``, to budget a
view) and ``viewer`` (``strided_sample``, the histogram of a huge tensor). torch and numpy are looked up in
``sys.modules``, never imported for a value that is neither.
"""

from __future__ import annotations

import sys
from typing import Any

from tensorsight.core.stats.figures import DEFAULT_BUDGET, Stats, StatsBudget
from tensorsight.core.stats.numpy_kernel import array_stats, np_sample, np_unexpand, numpy_kind
from tensorsight.core.stats.torch_kernel import tensor_stats
from tensorsight.core.stats.torch_layout import compressed_layouts, plain_tensors, sample_view, unexpand, why_no_data


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
            if getattr(value, "is_nested", False) or value.device.type == "meta" or why_no_data(torch, value):
                return 0
            if value.layout != torch.strided:
                sparse = value.is_sparse or value.layout in compressed_layouts(torch)
                return int(value._nnz()) if sparse else int(value.numel())
            return int(unexpand(value)[0].numel())
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.ndarray):
        array = np.asarray(value)
        return 0 if numpy_kind(array.dtype) == "none" else int(np_unexpand(array)[0].size)
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
            base = unexpand(value)[0]
            return base if base.numel() <= target else sample_view(torch, base, target)
    import numpy as np

    base = np_unexpand(np.asarray(value))[0]
    return base if base.size <= target else np_sample(base, target)


def zero_count(value: Any, budget: StatsBudget = DEFAULT_BUDGET) -> int | None:
    """Exact number of elements equal to zero, or None when it cannot be known within the budget."""
    stats = compute_stats(value, budget, zeros=True)
    return None if stats is None or not stats.exact else stats.zeros
