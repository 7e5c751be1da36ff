"""core.stats: exact figures against torch/numpy references, across dtypes, layouts, chunking and budgets; the cache."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from tensorsight.core.stats import torch_kernel
from tensorsight.core.stats.cache import StatsCache
from tensorsight.core.stats.dispatch import compute_stats, zero_count
from tensorsight.core.stats.figures import StatsBudget
from tensorsight.core.stats.numpy_kernel import array_stats
from tensorsight.core.stats.torch_kernel import tensor_stats

pytestmark = pytest.mark.filterwarnings(
    "ignore::UserWarning"
)  # sparse CSR / quantized creation warn (beta, deprecated)

# Small chunks force the multi-chunk paths on small tensors.
CHUNKED = StatsBudget(chunk_elements=1000)


def reference(values: torch.Tensor) -> dict:
    """Figures over the finite elements, computed the slow obvious way in float64."""
    flat = values.detach().reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.to(torch.float64)
    finite = flat[torch.isfinite(flat)].to(torch.float64) if flat.is_floating_point() else flat.to(torch.float64)
    return {
        "min": finite.min().item(),
        "max": finite.max().item(),
        "mean": finite.mean().item(),
        "std": finite.std().item(),
        "nan": int(torch.isnan(flat).sum()) if flat.is_floating_point() else 0,
        "posinf": int(torch.isposinf(flat).sum()) if flat.is_floating_point() else 0,
        "neginf": int(torch.isneginf(flat).sum()) if flat.is_floating_point() else 0,
        "zeros": int((flat == 0).sum()),
        "finite": int(finite.numel()),
    }


def assert_matches(stats, expected, rel=1e-6):
    assert stats.exact
    assert stats.min == pytest.approx(expected["min"], rel=rel, abs=1e-12)
    assert stats.max == pytest.approx(expected["max"], rel=rel, abs=1e-12)
    scale = max(1.0, abs(expected["min"]), abs(expected["max"]))  # float32 data: absolute error ~1e-7 of its scale
    assert stats.mean == pytest.approx(expected["mean"], rel=rel, abs=1e-7 * scale)
    assert stats.std == pytest.approx(expected["std"], rel=rel, abs=1e-7 * scale)
    assert (stats.nan, stats.posinf, stats.neginf) == (expected["nan"], expected["posinf"], expected["neginf"])
    assert stats.finite == expected["finite"]
    if stats.zeros is not None:
        assert stats.zeros == expected["zeros"]


def seeded(*shape, dtype=torch.float32, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator, dtype=torch.float64).to(dtype)


@pytest.mark.parametrize("budget", [StatsBudget(), CHUNKED], ids=["one-chunk", "many-chunks"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_float_figures_are_exact(budget, dtype):
    x = seeded(123, 77, dtype=dtype) * 3 + 1
    x[0, :5] = 0
    assert_matches(tensor_stats(x, budget, zeros=True), reference(x))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_is_accumulated_in_float32_without_overflow(dtype):
    x = torch.full((100_000,), 1.5, dtype=dtype)  # a float16 sum would be Inf
    x[::2] = -0.5
    stats = tensor_stats(x, CHUNKED)
    assert stats.nan == stats.posinf == stats.neginf == 0
    assert stats.mean == pytest.approx(0.5)
    assert stats.std == pytest.approx(reference(x)["std"], rel=1e-6)


def test_nan_and_inf_are_counted_exactly_and_kept_out_of_the_figures():
    x = seeded(5000) + 10
    x[7] = float("nan")
    x[70:73] = float("inf")
    x[4000] = -float("inf")
    for budget in (StatsBudget(), CHUNKED):
        stats = tensor_stats(x, budget, zeros=True)
        assert_matches(stats, reference(x))
        assert (stats.nan, stats.posinf, stats.neginf) == (1, 3, 1)


def test_all_nan_has_counts_and_no_figures():
    stats = tensor_stats(torch.full((10,), float("nan")))
    assert stats.nan == 10 and stats.finite == 0
    assert stats.min is None and stats.mean is None and stats.std is None
    assert not stats.all_zero


# Where the non-finite values sit decides which path counts them: one row (of ROW_ELEMENTS), the partial last row,
# a few runs of clean rows, more runs than MAX_RANGE_RUNS (row-by-row range), every row.
PLACEMENTS = {
    "one-nan": lambda x: x.view(-1).__setitem__(12_345, float("nan")),
    "one-inf": lambda x: x.view(-1).__setitem__(0, float("inf")),
    "one-neg-inf": lambda x: x.view(-1).__setitem__(-1, -float("inf")),
    "tail-nan": lambda x: x.view(-1).__setitem__(x.numel() - 3, float("nan")),
    "nan-and-inf-in-one-row": lambda x: x.view(-1)[100:102].copy_(torch.tensor([float("inf"), -float("inf")])),
    "many-rows": lambda x: x.view(-1)[::997].fill_(float("nan")),
    "every-third-row": lambda x: x.view(-1)[::12_288].fill_(-float("inf")),
    "all-nan": lambda x: x.fill_(float("nan")),
    "all-inf": lambda x: x.fill_(float("inf")),
}


@pytest.mark.parametrize("budget", [StatsBudget(), StatsBudget(chunk_elements=50_000)], ids=["whole", "chunked"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("placement", list(PLACEMENTS))
def test_nonfinite_anywhere_gives_exact_counts_and_finite_figures(placement, dtype, budget):
    x = (seeded(300_001) * 2 + 0.5).to(dtype)
    PLACEMENTS[placement](x)
    stats = tensor_stats(x, budget, zeros=True)
    if not torch.isfinite(x).any():
        counts = (int(torch.isnan(x).sum()), int(torch.isposinf(x).sum()), int(torch.isneginf(x).sum()))
        assert (stats.nan, stats.posinf, stats.neginf) == counts and sum(counts) == x.numel()
        assert stats.finite == 0 and stats.min is None and stats.mean is None and stats.std is None
        return
    expected = reference(x)
    assert_matches(stats, expected, rel=1e-5 if dtype in (torch.float16, torch.bfloat16) else 1e-6)
    assert stats.total == pytest.approx(x[torch.isfinite(x)].double().sum().item(), rel=1e-6, abs=1e-3)


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "busy-cpu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("placement", list(PLACEMENTS))
def test_cpu_tiles_give_the_figures_of_the_whole_tensor(placement, dtype, busy, monkeypatch):
    """Dense CPU data is read a cache tile at a time: with tiles of 5 rows, 300,001 values make 15 tiles and a
    partial row, and a NaN/Inf in any of them is repaired in its own tile while the others stand. On a busy CPU
    (every tile "slow") the first tile is followed by one span of all the other rows, with the same figures."""
    monkeypatch.setattr(torch_kernel, "CACHE_TILE_BYTES", 5 * torch_kernel.ROW_ELEMENTS * dtype.itemsize)
    if busy:
        monkeypatch.setattr(torch_kernel, "SLOW_TILE_SECONDS", 0.0)
    x = (seeded(300_001) * 2 + 0.5).to(dtype)
    PLACEMENTS[placement](x)
    stats = tensor_stats(x, zeros=True)
    if not torch.isfinite(x).any():
        assert stats.finite == 0 and stats.min is None and stats.nan + stats.posinf + stats.neginf == x.numel()
        return
    assert_matches(stats, reference(x))
    assert stats.total == pytest.approx(x[torch.isfinite(x)].double().sum().item(), rel=1e-6, abs=1e-3)


def test_finite_values_whose_squares_overflow_float32_rows_stay_exact():
    x = seeded(20_000) * 1e20  # each square is finite in float64, a row's Σx² is not in float32
    x[5] = float("nan")
    stats = tensor_stats(x)
    assert stats.nan == 1 and stats.finite == 19_999
    assert stats.std == pytest.approx(reference(x)["std"], rel=1e-6)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_nonfinite_parts_are_counted_in_any_row(dtype):
    z = torch.complex(seeded(50_001, seed=3), seeded(50_001, seed=4)).to(dtype)
    z[10] = complex(float("nan"), 0.0)
    z[20_000] = complex(1.0, float("inf"))
    z[50_000] = complex(float("inf"), float("nan"))  # NaN wins: counted once, as NaN
    for budget in (StatsBudget(), StatsBudget(chunk_elements=7_000)):
        stats = tensor_stats(z, budget)
        kept = z[torch.isfinite(z)].to(torch.complex128)
        assert (stats.nan, stats.posinf, stats.finite) == (2, 1, 49_998)
        assert stats.mean == pytest.approx(complex(kept.mean()), rel=1e-6, abs=1e-9)
        assert stats.std == pytest.approx(kept.std().item(), rel=1e-6)
        assert stats.min == pytest.approx(kept.abs().min().item(), rel=1e-6)
        assert stats.max == pytest.approx(kept.abs().max().item(), rel=1e-6)
    assert tensor_stats(torch.full((9000,), complex(float("nan"), 1.0), dtype=dtype)).nan == 9000


def test_large_mean_small_spread_keeps_the_variance():
    # E[x²] - mean² cancels catastrophically here; the centred recomputation must rescue it.
    x = seeded(200_000, dtype=torch.float32) * 0.01 + 1e4
    stats = tensor_stats(x)
    assert stats.std == pytest.approx(x.double().std().item(), rel=1e-4)
    arr = x.numpy()
    assert array_stats(arr).std == pytest.approx(arr.astype(np.float64).std(ddof=1), rel=1e-4)


def test_huge_finite_values_do_not_overflow_the_sum_of_squares():
    x = torch.tensor([1e30, -1e30, 3e30], dtype=torch.float32)
    stats = tensor_stats(x)
    assert stats.nan == stats.posinf == 0
    assert stats.std == pytest.approx(x.double().std().item(), rel=1e-6)


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int32, torch.int64])
def test_integers(dtype):
    x = (torch.arange(3000) % 97).to(dtype)
    stats = tensor_stats(x, CHUNKED, zeros=True)
    assert stats.kind == "int"
    assert_matches(stats, reference(x))
    assert stats.total == int(x.long().sum())


def test_bool_counts_true():
    x = torch.arange(2500) % 5 == 0
    stats = tensor_stats(x, CHUNKED, zeros=True)
    assert stats.kind == "bool"
    assert stats.total == 500 and stats.zeros == 2000
    assert stats.mean == pytest.approx(0.2)
    assert (stats.min, stats.max) == (0.0, 1.0)


def test_complex_mean_std_and_magnitude_range():
    z = torch.complex(seeded(3000, seed=1), seeded(3000, seed=2))
    z[5] = complex(float("nan"), 1.0)
    z[6] = complex(float("inf"), 0.0)
    stats = tensor_stats(z, CHUNKED)
    kept = z[torch.isfinite(z)].to(torch.complex128)
    assert stats.kind == "complex" and not stats.inf_signed
    assert (stats.nan, stats.posinf) == (1, 1)
    assert stats.mean == pytest.approx(complex(kept.mean()), rel=1e-9)
    assert stats.std == pytest.approx(kept.std().item(), rel=1e-9)
    assert stats.min == pytest.approx(kept.abs().min().item())
    assert stats.max == pytest.approx(kept.abs().max().item())


@pytest.mark.parametrize(
    "make",
    [
        lambda x: x.t(),
        lambda x: x[::3, 1::2],
        lambda x: x.reshape(2, 3, 41, 41).to(memory_format=torch.channels_last),
        lambda x: x.unsqueeze(0).expand(4, -1, -1),
        lambda x: torch.as_strided(x, (40, 41), (41, 1), 5),
    ],
    ids=["transposed", "stepped", "channels-last", "expanded", "as-strided"],
)
def test_non_contiguous_layouts_match_their_values(make):
    x = make(seeded(246, 41))
    for budget in (StatsBudget(), CHUNKED):
        assert_matches(tensor_stats(x, budget, zeros=True), reference(x.contiguous()))


def test_expanded_tensors_count_repeats_without_reading_them():
    base = torch.tensor([1.0, float("nan"), 3.0, 0.0])
    huge = base.expand(250_000_000_000, 4)  # 1e12 elements, 16 bytes of storage
    stats = tensor_stats(huge, zeros=True)
    assert stats.exact and stats.numel == 10**12 and stats.counted == 4
    assert stats.nan == 250_000_000_000 and stats.zeros == 250_000_000_000
    assert stats.mean == pytest.approx(4 / 3)
    squared_deviations = (1 - 4 / 3) ** 2 + (3 - 4 / 3) ** 2 + (0 - 4 / 3) ** 2  # of each finite value, once
    repeats, finite = 250_000_000_000, 750_000_000_000
    assert stats.std == pytest.approx(math.sqrt(squared_deviations * repeats / (finite - 1)))


def test_empty_and_zero_dim():
    empty = tensor_stats(torch.empty(0, 3))
    assert empty.numel == 0 and empty.nan == 0 and empty.min is None and not empty.all_zero
    scalar = tensor_stats(torch.tensor(2.5))
    assert (scalar.min, scalar.max, scalar.mean, scalar.std) == (2.5, 2.5, 2.5, None)


def test_all_zero():
    assert tensor_stats(torch.zeros(7, 3)).all_zero
    assert not tensor_stats(torch.tensor([0.0, 1e-30])).all_zero


def test_meta_tensors_have_no_values():
    stats = tensor_stats(torch.empty(3, 4, device="meta"))
    assert stats.kind == "none" and not stats.has_values and stats.numel == 12
    assert "meta" in stats.note


@pytest.mark.parametrize("to_sparse", [lambda d: d.to_sparse(), lambda d: d.to_sparse_csr()], ids=["coo", "csr"])
def test_sparse_stats_include_the_implicit_zeros(to_sparse):
    dense = torch.zeros(30, 40)
    dense[3, 4] = 5.0
    dense[7, 1] = -2.0
    dense[9, 9] = float("nan")
    stats = tensor_stats(to_sparse(dense), zeros=True)
    assert_matches(stats, reference(dense))


def test_uncoalesced_coo_sums_duplicates():
    coo = torch.sparse_coo_tensor(torch.tensor([[0, 0, 1], [0, 0, 1]]), torch.tensor([1.0, 2.0, 4.0]), (3, 3))
    assert not coo.is_coalesced()
    assert_matches(tensor_stats(coo, zeros=True), reference(coo.to_dense()))


def test_quantized_values_are_dequantized():
    q = torch.quantize_per_tensor(torch.linspace(-1, 1, 3000), 0.01, 3, torch.qint8)
    assert_matches(tensor_stats(q, CHUNKED), reference(q.dequantize()))


def test_over_budget_is_a_deterministic_marked_estimate():
    x = seeded(100_000)
    budget = StatsBudget(exact_elements=10_000, sample_elements=5_000)
    state = torch.get_rng_state()
    first, second = tensor_stats(x, budget), tensor_stats(x, budget)
    assert torch.equal(state, torch.get_rng_state())
    assert first == second
    assert not first.exact and first.counted <= 5_100
    assert first.mean == pytest.approx(0.0, abs=0.05) and first.std == pytest.approx(1.0, rel=0.05)
    assert first.finite == 100_000
    assert zero_count(x, budget) is None  # an estimate is not an exact count


def test_reading_changes_nothing():
    x = seeded(64, 33).requires_grad_()
    y = x * 2
    before, version, grad_fn, rng = y.detach().clone(), y._version, y.grad_fn, torch.get_rng_state()
    tensor_stats(y, CHUNKED, zeros=True)
    assert torch.equal(y, before) and y._version == version and y.grad_fn is grad_fn
    assert torch.equal(torch.get_rng_state(), rng)


def test_compute_stats_dispatch():
    assert compute_stats([1.0, 2.0]) is None
    assert compute_stats(torch.ones(2)).kind == "float"
    assert compute_stats(np.ones(2)).kind == "float"


# ---- numpy -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [StatsBudget(), CHUNKED], ids=["one-chunk", "many-chunks"])
def test_numpy_floats_match_torch_reference(budget):
    a = seeded(50, 77, dtype=torch.float32).numpy() * 2
    a[1, 1] = np.nan
    a[2, 2] = np.inf
    a[3, :] = 0
    assert_matches(array_stats(a, budget, zeros=True), reference(torch.from_numpy(a)))
    assert_matches(
        array_stats(a.T[::2], budget, zeros=True), reference(torch.from_numpy(np.ascontiguousarray(a.T[::2])))
    )


def test_numpy_ints_bools_complex_and_broadcast():
    ints = np.arange(-500, 500, dtype=np.int16)
    assert_matches(array_stats(ints, CHUNKED, zeros=True), reference(torch.from_numpy(ints)))
    flags = np.arange(100) % 4 == 0
    assert array_stats(flags).total == 25
    z = np.array([1 + 2j, 3 - 1j, np.nan + 0j], dtype=np.complex64)
    stats = array_stats(z)
    assert stats.nan == 1 and stats.mean == pytest.approx(2 + 0.5j)
    broadcast = np.broadcast_to(np.array([1.0, 2.0]), (10**6, 2))
    stats = array_stats(broadcast)
    assert stats.counted == 2 and stats.numel == 2 * 10**6 and stats.mean == 1.5


def test_numpy_memmap_is_read_like_an_array(tmp_path):
    m = np.memmap(tmp_path / "v.bin", dtype=np.float32, mode="w+", shape=(3000,))
    m[:] = np.arange(3000)
    assert_matches(array_stats(m, CHUNKED), reference(torch.arange(3000.0)))


@pytest.mark.parametrize(
    ("array", "why"),
    [
        (np.array([object(), 1], dtype=object), "object array"),
        (np.zeros(2, dtype=[("a", "i4")]), "structured"),
        (np.array(["a", "b"]), "string"),
        (np.array(["2024-01-01"], dtype="datetime64[D]"), "dates"),
    ],
)
def test_numpy_without_numbers_says_why(array, why):
    stats = array_stats(array)
    assert stats.kind == "none" and why in stats.note


# ---- cache -------------------------------------------------------------------------------------------------------


def test_cache_reuses_until_the_tensor_changes():
    cache = StatsCache()
    x = seeded(1000)
    first = cache.stats(x)
    assert cache.stats(x) is first and cache.hits == 1
    x.add_(1)  # bumps _version
    changed = cache.stats(x)
    assert changed is not first and changed.mean == pytest.approx(first.mean + 1)
    x.data = torch.zeros(5)  # new storage and shape
    assert cache.stats(x).all_zero


def test_cache_never_serves_a_dead_tensors_stats_to_its_successor():
    cache = StatsCache()
    for value in range(5):  # same shape, same version 0, and usually the same freed address
        x = torch.full((256,), float(value))
        assert cache.stats(x).mean == value
        del x
    assert len(cache) <= 1


def test_cache_adds_zero_counts_on_demand_and_bounds_its_size():
    cache = StatsCache(capacity=3)
    x = torch.tensor([0.0, 1.0, 0.0])
    assert cache.stats(x).zeros is None
    assert cache.stats(x, zeros=True).zeros == 2
    assert cache.stats(x).zeros == 2
    keep = [torch.ones(2) for _ in range(5)]
    for t in keep:
        cache.stats(t)
    assert len(cache) == 3


def test_views_of_a_tensor_see_in_place_writes_through_the_shared_version():
    cache = StatsCache()
    x = torch.zeros(10)
    view = x[:5]
    assert cache.stats(view).all_zero
    x[0] = 1.0  # writes through the base: the shared version counter moves
    assert cache.stats(view).max == 1.0


# ---- CUDA (runs where a GPU is present) --------------------------------------------------------------------------


@pytest.mark.cuda
def test_cuda_figures_match_cpu_and_stay_on_device():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    x = seeded(3000, 333)
    x[5, 5] = float("nan")
    cpu = tensor_stats(x, CHUNKED, zeros=True)
    gpu = tensor_stats(x.cuda(), CHUNKED, zeros=True)
    assert (gpu.nan, gpu.zeros, gpu.finite) == (cpu.nan, cpu.zeros, cpu.finite)
    for field in ("min", "max", "mean", "std"):
        assert getattr(gpu, field) == pytest.approx(getattr(cpu, field), rel=1e-5)


@pytest.mark.cuda
def test_cuda_finite_tensor_costs_one_transfer():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from support.cuda import count_syncs

    x = seeded(4096, 1024).cuda()
    syncs, _ = count_syncs(lambda: tensor_stats(x, StatsBudget(chunk_elements=1 << 20)))
    assert syncs == 1


CUDA_CASES = {
    "f32 contiguous": (torch.float32, False),
    "f32 transposed": (torch.float32, True),
    "f64": (torch.float64, False),
    "f16": (torch.float16, False),
    "bf16 transposed": (torch.bfloat16, True),
    "complex64": (torch.complex64, False),
}


@pytest.mark.cuda
@pytest.mark.parametrize("case", sorted(CUDA_CASES))
@pytest.mark.parametrize("poisoned", [False, True], ids=["finite", "nan-inf"])
def test_cuda_figures_and_nonfinite_counts_match_the_cpu(case, poisoned):
    """Every path of a CUDA summary (dense whole-tensor reductions, converted chunks, complex, the repair of rows
    holding NaN/Inf) gives the CPU's figures of the same values."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    dtype, transposed = CUDA_CASES[case]
    x = seeded(2000, 777, dtype=torch.complex64 if dtype.is_complex else torch.float32, seed=3)
    if poisoned:
        x[0, 0] = float("nan")
        x[1999, 776] = float("inf")
        x[1000, :50] = -float("inf")
        x[77, 1:3] = float("nan")
    x = x.to(dtype)
    if transposed:
        x = x.t()
    cpu = tensor_stats(x, CHUNKED, zeros=True)
    gpu = tensor_stats(x.cuda(), CHUNKED, zeros=True)
    assert gpu.exact and gpu.kind == cpu.kind
    assert (gpu.nan, gpu.posinf, gpu.neginf, gpu.zeros, gpu.finite) == (
        cpu.nan,
        cpu.posinf,
        cpu.neginf,
        cpu.zeros,
        cpu.finite,
    )
    if poisoned:  # a complex element with an infinite part counts as +Inf (its sign has no meaning)
        assert (gpu.nan, gpu.posinf, gpu.neginf) == ((3, 51, 0) if dtype.is_complex else (3, 1, 50))
    for field in ("min", "max", "std"):
        assert getattr(gpu, field) == pytest.approx(getattr(cpu, field), rel=1e-4)
    assert gpu.mean == pytest.approx(cpu.mean, rel=1e-4, abs=1e-6)


@pytest.mark.cuda
def test_cuda_int_and_bool_figures_match_the_cpu():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    ints = torch.arange(-5000, 5000, dtype=torch.int64).reshape(100, 100)
    flags = ints % 3 == 0
    for value in (ints, flags):
        cpu, gpu = tensor_stats(value, CHUNKED, zeros=True), tensor_stats(value.cuda(), CHUNKED, zeros=True)
        assert (gpu.min, gpu.max, gpu.total, gpu.zeros) == (cpu.min, cpu.max, cpu.total, cpu.zeros)
        assert gpu.std == pytest.approx(cpu.std, rel=1e-9)


@pytest.mark.cuda
def test_cuda_summary_with_zero_count_costs_one_transfer():
    """The expanded "stats" row asks for the zero count too: still one transfer for a finite tensor."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from support.cuda import count_syncs

    x = seeded(4096, 1024).cuda()
    x[:7, 0] = 0.0
    syncs, stats = count_syncs(lambda: tensor_stats(x, zeros=True))
    assert stats.zeros == 7
    assert syncs == 1


@pytest.mark.cuda
def test_cuda_nan_costs_a_few_transfers_not_one_per_row():
    """A tensor with NaN/Inf in a few rows: the first transfer finds them, the repair adds a bounded few (the bad
    rows' indices, the clean rows' figures, the bad rows' exact counts), however many rows the tensor has."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from support.cuda import count_syncs

    x = seeded(4096, 4096).cuda()
    for row in (5, 900, 3000):
        x[row, 17] = float("nan")
    x[4000, 1] = -float("inf")
    syncs, stats = count_syncs(lambda: tensor_stats(x))
    assert (stats.nan, stats.neginf, stats.finite) == (3, 1, x.numel() - 4)
    assert syncs <= 4


# ---- core.nonfinite (shared with the sentinel and conditions) ----------------------------------------------------


def test_nonfinite_fast_path_is_not_fooled_by_half_precision_overflow(monkeypatch):
    from tensorsight.core import nonfinite

    def exact_count_must_not_run(*args, **kwargs):
        raise AssertionError("a float16 tensor of ones took the slow exact-count path")

    monkeypatch.setattr(nonfinite, "_torch_exact", exact_count_must_not_run)
    assert nonfinite.nonfinite_counts(torch.ones(100_000, dtype=torch.float16)) == nonfinite.NONE_FOUND  # sum = Inf
    assert nonfinite.nonfinite_counts(np.ones(100_000, dtype=np.float16)) == nonfinite.NONE_FOUND


def test_nonfinite_counts_float8_and_agrees_with_stats():
    from tensorsight.core.nonfinite import NonFiniteCounts, nonfinite_counts

    values = torch.tensor([1.0, float("nan"), float("inf"), -float("inf"), 2.0])
    assert nonfinite_counts(values.to(torch.float8_e5m2)) == NonFiniteCounts(1, 1, 1)
    assert tensor_stats(values).nonfinite == nonfinite_counts(values) == NonFiniteCounts(1, 1, 1)


ONE_PASS = StatsBudget(spread=False)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.complex64])
@pytest.mark.parametrize("budget", [ONE_PASS, StatsBudget(spread=False, chunk_elements=1000)])
def test_one_pass_gives_the_exact_counts_and_mean_of_the_whole_summary_and_leaves_the_spread_out(dtype, budget):
    values = torch.randn(20_011, generator=torch.Generator().manual_seed(3)).to(dtype)
    values[5] = float("nan")
    values[9000] = float("inf")
    values[-1] = -float("inf") if not dtype.is_complex else complex(1.0, math.inf)
    whole, glance = tensor_stats(values, dataclasses.replace(budget, spread=True)), tensor_stats(values, budget)
    assert whole.complete and not glance.complete and glance.exact
    counts = ("nan", "posinf", "neginf", "finite", "counted")
    assert [getattr(glance, name) for name in counts] == [getattr(whole, name) for name in counts]
    assert glance.total == pytest.approx(whole.total, rel=1e-9) and glance.mean == pytest.approx(whole.mean, rel=1e-9)
    assert glance.std is None and glance.min is None and glance.max is None and glance.sumsq is None
    assert glance.norm is None and not glance.all_zero


def test_one_pass_figures_serve_only_one_pass_requests_from_the_cache():
    cache = StatsCache()
    x = torch.arange(10_000.0)
    glance = cache.stats(x, ONE_PASS)
    assert cache.cached(x, ONE_PASS) is glance and cache.cached(x) is None  # a whole summary is not served σ-less
    whole = cache.stats(x)
    assert whole.complete and whole.std is not None and cache.cached(x, ONE_PASS) is whole


def test_strided_sample_is_a_deterministic_view_of_about_the_target() -> None:
    from tensorsight.core.stats.dispatch import strided_sample

    x = torch.arange(10_000_000, dtype=torch.float32)
    sample = strided_sample(x, 1 << 20)
    assert sample.data_ptr() == x.data_ptr() and (1 << 19) < sample.numel() <= (1 << 20) + 1
    assert torch.equal(sample, strided_sample(x, 1 << 20))
    assert strided_sample(x[:10], 1 << 20).numel() == 10
    expanded = torch.ones(3, 1).expand(3, 1_000_000)
    assert strided_sample(expanded, 1 << 20).numel() == 3  # the expanded dimension is read once
    assert strided_sample(np.arange(5_000_000.0), 1000).size <= 1001
