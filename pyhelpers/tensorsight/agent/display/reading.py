"""Reading live values safely for the debugger's views: the stats cache within a request's time budget, torch quieted
while we look, and the two kinds of rows we add (plain-text facts and expandable groups).

Shared by the rest of ``agent.display`` (``presentation`` for the one-line values, ``children`` for what an expand
lists, ``tensor_facts`` and ``module_scan`` for the figures). Stdlib only at import; torch is used only when the
program already imported it.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from tensorsight.agent.display.budget import CLOCK
from tensorsight.core.stats.cache import StatsCache
from tensorsight.core.stats.dispatch import elements_to_read
from tensorsight.core.stats.figures import DEFAULT_BUDGET, SUMMARY_PASSES, Stats, StatsBudget, unavailable
from tensorsight.core.stats.torch_layout import plain_tensors

CACHE = StatsCache(capacity=4096)  # grows (``reserve``) to the parameters and grads of the modules in view
ALWAYS_EXACT_ELEMENTS = 1 << 16  # a reduction this small costs less than the summary around it: never deferred
DEFERRED_NOTE = "figures on expand: this view's time budget is spent"
ONE_PASS = replace(DEFAULT_BUDGET, spread=False)  # what a line affords for a huge tensor: the alarm and the mean

Entry = tuple[str, Any, Any]  # (name, value, evaluate-name suffix or callable or None), pydevd's DAP child triple


class Info(str):
    """A computed, read-only fact shown as plain text (no quotes, not expandable)."""


class Group:
    """An expandable row of computed children (stats, values, raw attributes), built only when expanded."""

    def __init__(self, label: str, build: Callable[[], list[Entry]]) -> None:
        self.label = label
        self._build = build

    def entries(self) -> list[Entry]:
        try:
            with quiet_torch():
                return self._build()
        except Exception as exc:  # noqa: BLE001 - e.g. a tensor subclass whose every operation raises
            return [("error", Info(f"could not list: {short_error(exc)}"), None)]

    def __repr__(self) -> str:
        return self.label


def type_name(value: Any) -> str:
    try:
        return type(value).__name__
    except Exception:  # noqa: BLE001
        return "object"


def short_error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = text if len(text) <= 80 else text[:79] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextlib.contextmanager
def quiet_torch() -> Iterator[None]:
    """No autograd recording and no ``__torch_function__`` (a user subclass's, or any mode's: see
    ``core.stats.torch_layout.plain_tensors``) while we look at tensors (both thread-local)."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    with torch.no_grad(), plain_tensors(torch):
        yield


def safe_stats(value: Any, *, zeros: bool = False, glance: bool = True) -> Stats:
    """Cached stats of a tensor/array, within the request's time budget; a failure becomes Stats that say why.

    Inside a debugger request, by what the tensor's elements cost at the speed the clock has measured: exact figures
    when they fit the line's glance budget (``glance=False``, the expanded "stats" row: the value's whole budget);
    else, when one pass fits what is left, what it finds: exact NaN/Inf counts and the mean, σ and the range left to
    the expand (``Stats.complete`` False); else a marked estimate from a strided sample; and no figures at all
    ("figures on expand") once the budget is spent and nothing is cached. Small tensors always get their exact
    figures: they cost the bookkeeping around them, which doing less would not save. Never raises.
    """
    try:
        cached = CACHE.cached(value, DEFAULT_BUDGET)
        if cached is not None and (not zeros or cached.zeros is not None or not cached.has_values):
            return cached
        cost = elements_to_read(value)
        affordable = CLOCK.affordable_elements()
        budget = DEFAULT_BUDGET
        passes = SUMMARY_PASSES
        if glance and cost > max(CLOCK.glance_elements(), ALWAYS_EXACT_ELEMENTS):
            if cost <= affordable * SUMMARY_PASSES and not zeros:
                budget, passes = ONE_PASS, 1
                partial = CACHE.cached(value, ONE_PASS)
                if partial is not None:
                    return partial
        if passes == SUMMARY_PASSES and cost > max(affordable, ALWAYS_EXACT_ELEMENTS):
            if CLOCK.remaining() <= 0:
                return unavailable(numel_of(value), DEFERRED_NOTE)
            budget = _budget_within(affordable)
        start = time.perf_counter()
        result = CACHE.stats(value, budget, zeros=zeros)
        if result is not None:  # the clock's speed is a whole summary's: a one-pass line read a third as much
            CLOCK.learn(result.counted * passes // SUMMARY_PASSES, time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001
        return unavailable(numel_of(value), f"stats unavailable: {short_error(exc)}")
    return result if result is not None else unavailable(numel_of(value), "not a tensor")


def _budget_within(affordable: int) -> StatsBudget:
    """A budget that summarises from a strided sample small enough for the time left (at least 64K elements)."""
    sample = max(1 << 16, min(DEFAULT_BUDGET.sample_elements, affordable // 2))
    return StatsBudget(exact_elements=min(DEFAULT_BUDGET.exact_elements, affordable), sample_elements=sample)


def numel_of(value: Any) -> int:
    try:
        return int(value.numel()) if callable(getattr(value, "numel", None)) else int(value.size)
    except Exception:  # noqa: BLE001
        return 0
