"""core.stats.torch_nonfinite and the numpy kernel's non-finite path: exact NaN/+Inf/-Inf counts and the figures of
the finite values when many (or all) elements are not finite, in runs read in place and in scattered rows, across
dtypes, chunk sizes and CPU tiles; and reading changes nothing (a float64 tensor is never its own scratch)."""

import math

import numpy as np
import pytest
import torch

from tensorsight.core.stats import torch_kernel
from tensorsight.core.stats.dispatch import compute_stats
from tensorsight.core.stats.figures import StatsBudget
from tensorsight.core.stats.numpy_kernel import array_stats
from tensorsight.core.stats.torch_kernel import tensor_stats
from tensorsight.core.stats.torch_rows import ROW_ELEMENTS

NAN, INF = float("nan"), float("inf")
N = 40 * ROW_ELEMENTS + 123  # 40 whole rows and a partial one


def _activations(dtype: torch.dtype = torch.float32) -> torch.Tensor:
    generator = torch.Generator().manual_seed(7)
    return (torch.randn(N, generator=generator, dtype=torch.float64) * 3 + 1).to(dtype)


def _poison(x: torch.Tensor, pattern: str) -> torch.Tensor:
    """What a diverging run leaves in a tensor: whole regions of NaN, saturated ±Inf, or both interleaved."""
    x = x.clone()
    flat = x.view(-1)
    if pattern == "all-nan":
        flat.fill_(NAN)
    elif pattern == "half-nan":
        flat[::2] = NAN
    elif pattern == "nan-region-and-scattered-rows":
        flat[3 * ROW_ELEMENTS : 30 * ROW_ELEMENTS + 17] = NAN  # a long run of bad rows, read in place
        flat[35 * ROW_ELEMENTS + 5] = INF  # single bad rows, copied together
        flat[38 * ROW_ELEMENTS + 9] = -INF
        flat[-1] = NAN  # the partial last row
    elif pattern == "inf-mixture":
        flat[::3] = INF
        flat[1::3] = -INF
        flat[2::7] = NAN
    elif pattern == "no-finite-value":
        flat[::3] = INF
        flat[1::3] = -INF
        flat[2::3] = NAN
    elif pattern == "one-finite-value":
        kept = float(flat[N // 2])
        flat.fill_(NAN)
        flat[N // 2] = kept
    elif pattern == "positive-values-among-nan":  # the range is not widened to the zeros that stand in for NaN
        flat.abs_().add_(0.5)
        flat[::2] = NAN
    elif pattern == "negative-values-among-inf":
        flat.abs_().add_(0.5).neg_()
        flat[::2] = INF
    return x


PATTERNS = [
    "all-nan",
    "half-nan",
    "nan-region-and-scattered-rows",
    "inf-mixture",
    "no-finite-value",
    "one-finite-value",
    "positive-values-among-nan",
    "negative-values-among-inf",
]
BUDGETS = {"default": StatsBudget(), "small-chunks": StatsBudget(chunk_elements=3 * ROW_ELEMENTS + 5)}


def _expected(x: torch.Tensor) -> dict:
    flat = x.reshape(-1).double()
    finite = flat[torch.isfinite(flat)]
    return {
        "nan": int(torch.isnan(flat).sum()),
        "posinf": int(torch.isposinf(flat).sum()),
        "neginf": int(torch.isneginf(flat).sum()),
        "finite": int(finite.numel()),
        "values": finite,
    }


def _check(stats, x: torch.Tensor, rel: float = 1e-6) -> None:
    expected = _expected(x)
    assert (stats.nan, stats.posinf, stats.neginf, stats.finite) == (
        expected["nan"],
        expected["posinf"],
        expected["neginf"],
        expected["finite"],
    )
    values = expected["values"]
    if not values.numel():
        assert stats.min is None and stats.max is None and stats.mean is None and stats.std is None
        return
    assert stats.min == values.min().item() and stats.max == values.max().item()
    assert stats.mean == pytest.approx(values.mean().item(), rel=rel, abs=1e-9)
    if values.numel() > 1:
        assert stats.std == pytest.approx(values.std().item(), rel=rel, abs=1e-9)


@pytest.mark.parametrize("budget", list(BUDGETS), ids=list(BUDGETS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("pattern", PATTERNS)
def test_torch_counts_are_exact_and_figures_cover_the_finite_values(pattern, dtype, budget):
    x = _poison(_activations(dtype), pattern)
    _check(
        tensor_stats(x, BUDGETS[budget], zeros=True), x, rel=1e-5 if dtype in (torch.float16, torch.bfloat16) else 1e-6
    )


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "busy-cpu"])
@pytest.mark.parametrize("pattern", PATTERNS)
def test_torch_cpu_tiles_repair_each_tile_with_exact_counts(pattern, busy, monkeypatch):
    """Tiles of 4 rows: a NaN region spans many tiles, each repaired on its own (or, on a busy CPU, in one span)."""
    monkeypatch.setattr(torch_kernel, "CACHE_TILE_BYTES", 4 * ROW_ELEMENTS * 4)
    if busy:
        monkeypatch.setattr(torch_kernel, "SLOW_TILE_SECONDS", 0.0)
    x = _poison(_activations(), pattern)
    _check(tensor_stats(x), x)


@pytest.mark.parametrize("budget", list(BUDGETS), ids=list(BUDGETS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("pattern", PATTERNS)
def test_numpy_counts_are_exact_and_figures_cover_the_finite_values(pattern, dtype, budget):
    x = _poison(_activations(torch.float64), pattern)
    array = x.numpy().astype(dtype)
    before = array.copy()
    stats = array_stats(array, BUDGETS[budget], zeros=True)
    assert np.array_equal(array, before, equal_nan=True)  # the chunk copies are overwritten, never the array
    _check(stats, torch.from_numpy(array), rel=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_reading_a_half_nan_tensor_writes_nothing(dtype):
    """float64 data converts to float64 without a copy: the careful path must still work on buffers of its own."""
    weights = _poison(_activations(dtype), "half-nan").requires_grad_()
    before, version = weights.detach().clone(), weights._version
    stats = tensor_stats(weights, BUDGETS["small-chunks"], zeros=True)
    assert stats.nan == (N + 1) // 2
    assert torch.equal(torch.isnan(weights), torch.isnan(before))
    assert torch.equal(torch.nan_to_num(weights.detach()), torch.nan_to_num(before))
    assert weights._version == version and weights.grad is None and weights.grad_fn is None


def test_empty_integer_and_bool_values_have_no_nonfinite_elements():
    for value in (
        torch.empty(0),
        torch.empty(0, 3, dtype=torch.float16),
        np.empty((0,), dtype=np.float32),
        torch.arange(-50, 50, dtype=torch.int32),
        np.arange(10, dtype=np.uint8),
        torch.tensor([True, False, True]),
        np.array([False, False]),
    ):
        stats = compute_stats(value)
        assert stats is not None
        assert (stats.nan, stats.posinf, stats.neginf) == (0, 0, 0)
        assert stats.finite == stats.numel


def test_low_precision_runs_of_nan_and_inf_are_counted_exactly():
    half = torch.full((N,), 2.0, dtype=torch.float16)
    half[: 20 * ROW_ELEMENTS] = NAN
    half[-7:] = -INF
    stats = tensor_stats(half, BUDGETS["small-chunks"])
    assert (stats.nan, stats.neginf, stats.finite) == (20 * ROW_ELEMENTS, 7, N - 20 * ROW_ELEMENTS - 7)
    assert stats.min == stats.max == 2.0 and stats.mean == 2.0 and stats.std == 0.0
    assert math.isclose(stats.total, 2.0 * stats.finite)
