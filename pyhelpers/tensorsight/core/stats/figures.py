"""What a summary of a tensor or array is and what it may cost: :class:`Stats`, :class:`StatsBudget`, and the raw
sums (:class:`Totals`) that both kernels accumulate and turn into Stats.

Imported by the kernels (``torch_kernel``, ``numpy_kernel``), ``dispatch`` and ``cache`` of this package, by
``core.summary`` (which words the figures) and by the agent's display (``reading``, ``tensor_facts``), which reads the
figures and picks budgets. Pure data and arithmetic: imports neither torch nor numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tensorsight.core.nonfinite import NonFiniteCounts

CANCELLATION_LIMIT = 1e3  # when mean² dwarfs the variance by this much, recompute the variance from centred values
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


@dataclass
class Totals:
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


def needs_centring(t: Totals) -> bool:
    """True when E[x²] - mean² would lose the variance to rounding (|mean| ≫ std), so it must be recomputed."""
    if t.finite < 2 or t.low == t.high:
        return False
    mean_sq = abs(t.total / t.finite) ** 2
    variance = t.sumsq / t.finite - mean_sq
    return variance <= 0 or mean_sq / variance > CANCELLATION_LIMIT


def sample_step(numel: int, target: int, last_dim: int) -> int:
    """A flat stride giving about ``target`` elements that does not alias the last dimension (no single column)."""
    step = max(1, math.ceil(numel / max(1, target)))
    if last_dim > 1:
        while math.gcd(step, last_dim) != 1:
            step += 1
    return step


def dim_steps(shape: tuple[int, ...], target: int) -> list[int]:
    """Per-dimension strides whose product cuts ``shape`` down to about ``target`` elements, spread over all dims."""
    numel = math.prod(shape)
    if numel <= target or numel <= 1:
        return [1] * len(shape)
    share = math.log(numel / max(1, target)) / math.log(numel)
    return [max(1, min(size, round(size**share))) for size in shape]


def add_totals(totals: Totals, part: Totals) -> None:
    """Fold the figures of one part of a tensor into the running totals."""
    totals.finite += part.finite
    totals.total += part.total
    totals.sumsq += part.sumsq
    totals.low = min(totals.low, part.low)
    totals.high = max(totals.high, part.high)
    totals.nan += part.nan
    totals.posinf += part.posinf
    totals.neginf += part.neginf
