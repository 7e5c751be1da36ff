""":class:`StatsCache`: the statistics of live tensors, kept until the tensor changes, so that an unchanged tensor is
summarised again for a dict lookup.

Used by the agent's display (``reading.CACHE``, which the Variables view, hover, watch and the viewer share). Keys
a result on the tensor's identity, ``_version``, shape, strides, storage offset, data pointer, dtype and device;
computes through ``dispatch.compute_stats``.
"""

from __future__ import annotations

import sys
import threading
import weakref
from dataclasses import replace
from typing import Any

from tensorsight.core.stats.dispatch import compute_stats
from tensorsight.core.stats.figures import DEFAULT_BUDGET, Stats, StatsBudget
from tensorsight.core.stats.torch_layout import plain_tensors


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
