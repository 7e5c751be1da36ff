"""CUDA helpers for the ``cuda``-marked tests: the skip when no CUDA device is present (the CI machines), and a count
of the device synchronisations a piece of code makes, read from PyTorch's own sync debug mode (every blocking
device-to-host copy, ``.item()``, ``.tolist()``, ``nonzero``... warns once)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

needs_cuda = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
]


def count_syncs(fn: Callable[[], Any]) -> tuple[int, Any]:
    """How many times ``fn`` synchronised the device, and what it returned (work queued before is drained first)."""
    torch.cuda.synchronize()
    previous = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = fn()
    finally:
        torch.cuda.set_sync_debug_mode(previous)
    return sum(1 for w in caught if "synchroniz" in str(w.message)), result
