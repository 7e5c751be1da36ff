"""core.summary: the line grammar, on hand-made facts (no torch needed): exact lines, priorities, width."""

import pytest

from tensorsight.core.stats.figures import Stats
from tensorsight.core.summary import (
    MAX_WIDTH,
    LoaderFacts,
    ModuleFacts,
    OptimizerFacts,
    TensorFacts,
    assemble,
    format_count,
    format_number,
    format_values,
    loader_line,
    module_line,
    optimizer_line,
    tensor_line,
)

pytestmark = pytest.mark.numpy_only  # also run under Python 3.10, 3.12 and 3.13 (scripts/test.sh)


def stats(**overrides) -> Stats:
    base = dict(numel=1024, kind="float", counted=1024, finite=1024, total=12.3, sumsq=1040.0, min=-3.2, max=2.9)
    base.update(mean=0.012, std=1.01, nan=0, posinf=0, neginf=0)
    base.update(overrides)
    return Stats(**base)


def facts(**overrides) -> TensorFacts:
    base = dict(dtype="f32", shape=(64, 16), where="cpu", stats=stats())
    base.update(overrides)
    return TensorFacts(**base)


def test_the_issue_examples():
    assert tensor_line(facts(requires_grad=True)) == "f32[64, 16] cpu μ=0.012 σ=1.01 [-3.2, 2.9] grad"
    nan = Stats(numel=1, kind="float", counted=1, finite=0, nan=1, posinf=0, neginf=0, total=0.0, sumsq=0.0)
    assert tensor_line(TensorFacts("f32", (), "cpu", stats=nan, values=float("nan"))) == "f32[] cpu ⚠ NaN nan"


def test_nonfinite_counts_come_before_the_figures():
    line = tensor_line(facts(stats=stats(nan=3, posinf=1, neginf=2, finite=1018), where="cuda:0"))
    assert line == "f32[64, 16] cuda:0 ⚠ NaN×3 +Inf×1 -Inf×2 μ=0.012 σ=1.01 [-3.2, 2.9]"


def test_all_nan_all_zero_and_constant():
    all_nan = stats(nan=1024, finite=0, min=None, max=None, mean=None, std=None)
    assert tensor_line(facts(stats=all_nan)) == "f32[64, 16] cpu ⚠ all NaN"
    zero = stats(min=0.0, max=0.0, mean=0.0, std=0.0, total=0.0, sumsq=0.0)
    assert tensor_line(facts(stats=zero)) == "f32[64, 16] cpu ⚠ all zero"
    constant = stats(min=2.0, max=2.0, mean=2.0, std=0.0)
    assert tensor_line(facts(stats=constant)) == "f32[64, 16] cpu all 2"


def test_estimates_are_marked():
    sampled = stats(exact=False, counted=1_000_000, numel=400_000_000, nan=8, finite=399_999_992)
    line = tensor_line(facts(shape=(400_000_000,), stats=sampled))
    assert line == "f32[400000000] cpu ⚠ NaN×≈8 μ≈0.012 σ≈1.01 ≈[-3.2, 2.9] (sampled 1M of 400M)"


def test_gradient_states():
    grad = stats(sumsq=16.0)
    assert tensor_line(facts(requires_grad=True, grad=grad)).endswith(" grad norm=4")
    zero_grad = stats(min=0.0, max=0.0, mean=0.0, std=0.0, total=0.0, sumsq=0.0)
    assert tensor_line(facts(requires_grad=True, grad=zero_grad)).endswith(" grad=0")
    bad_grad = stats(nan=5, finite=1019)
    line = tensor_line(facts(requires_grad=True, grad=bad_grad))
    assert line == "f32[64, 16] cpu ⚠ grad NaN×5 μ=0.012 σ=1.01 [-3.2, 2.9]"
    nonleaf = tensor_line(facts(requires_grad=True, grad_fn="MulBackward0"))
    assert nonleaf.endswith(" grad_fn=MulBackward0") and " grad " not in nonleaf + " "


def test_small_tensors_show_values_and_skip_the_range():
    small = stats(numel=3, counted=3, finite=3, min=-1.0, max=2.0, mean=0.5, std=1.5)
    assert tensor_line(facts(shape=(3,), stats=small, values=[0.5, -1.0, 2.0])) == "f32[3] cpu [0.5, -1, 2] μ=0.5 σ=1.5"


def test_ints_bools_complex():
    ints = stats(kind="int", min=0.0, max=99.0, mean=49.5, std=29.01, total=4950)
    assert tensor_line(facts(dtype="i64", shape=(100,), stats=ints)) == "i64[100] cpu μ=49.5 σ=29 [0, 99]"
    bools = stats(kind="bool", numel=50, counted=50, finite=50, total=24, min=0.0, max=1.0, mean=0.48)
    assert tensor_line(facts(dtype="bool", shape=(50,), stats=bools)) == "bool[50] cpu 24 True (48%)"
    none_true = stats(kind="bool", numel=50, counted=50, finite=50, total=0, min=0.0, max=0.0, mean=0.0, std=0.0)
    assert tensor_line(facts(dtype="bool", shape=(50,), stats=none_true)) == "bool[50] cpu all False"
    z = stats(kind="complex", mean=complex(1.5, -0.25), std=1.2, min=1.41, max=2.24, nan=4, inf_signed=False)
    line = tensor_line(facts(dtype="c64", shape=(12,), stats=z))
    assert line == "c64[12] cpu ⚠ NaN×4 μ=1.5-0.25j σ=1.2 |z|∈[1.41, 2.24]"


def test_no_values_says_why():
    meta = Stats(numel=12, kind="none", note="meta tensor: shape only, no data")
    assert (
        tensor_line(facts(shape=(3, 4), where="meta", stats=meta))
        == "f32[3, 4] meta (meta tensor: shape only, no data)"
    )
    empty = Stats(numel=0, kind="float", nan=0, posinf=0, neginf=0)
    assert tensor_line(facts(shape=(0, 3), stats=empty)) == "f32[0, 3] cpu"


def test_lines_stay_within_width_and_drop_the_least_important_first():
    long_shape = tuple(range(2, 40))
    line = tensor_line(facts(shape=long_shape, stats=stats(nan=1, finite=1023), grad_fn="SomeVeryLongBackward0"))
    assert len(line) <= MAX_WIDTH
    assert "⚠ NaN×1" in line  # alarms survive
    assert line.startswith("f32[2, 3, 4, …(33)…, 38, 39] cpu ⚠ NaN×1")
    narrow = tensor_line(facts(stats=stats(nan=1, finite=1023), grad_fn="MulBackward0"), width=48)
    assert narrow == "f32[64, 16] cpu ⚠ NaN×1 μ=0.012 σ=1.01"  # detail and range go first, the alarm stays
    assert assemble([(0, "a" * 200)], width=20) == "a" * 19 + "…"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.012, "0.012"),
        (1.0049, "1"),
        (-3.2, "-3.2"),
        (123456.0, "1.23e5"),
        (1e-7, "1e-7"),
        (0.0, "0"),
        (float("nan"), "nan"),
        (float("-inf"), "-inf"),
        (42, "42"),
        (True, "True"),
        (complex(1, -2), "1-2j"),
        (None, "?"),
    ],
)
def test_format_number(value, text):
    assert format_number(value) == text


def test_counts_and_values():
    assert [format_count(n) for n in (950, 9999, 12810, 1_234_567, 7e9)] == ["950", "9999", "12.8K", "1.23M", "7B"]
    assert format_values([[1.0, 2.5], [float("nan"), True]]) == "[[1, 2.5], [nan, True]]"


def test_module_line():
    model = ModuleFacts("MLP", True, params=12810, trainable=12810, devices=("cpu",), dtypes=("f32",), grad_norm=0.531)
    assert module_line(model) == "MLP cpu f32 train 12.8K params (all trainable) grad norm=0.531"
    frozen = ModuleFacts("Net", False, modes_differ=1, params=10, trainable=0, devices=("cpu", "cuda:0"))
    assert module_line(frozen) == "Net cpu,cuda:0 eval (1 submodule train) 10 params (frozen)"
    broken = ModuleFacts("Net", True, params=10, trainable=4, nonfinite_grads=("fc.weight", "fc.bias"), grad_norm=1.0)
    assert module_line(broken) == "Net ⚠ NaN/Inf in grads: fc.weight (+1) train 10 params (4 trainable)"
    lazy = ModuleFacts("LazyLinear", True, lazy=True)
    assert module_line(lazy) == "LazyLinear train ? params (lazy: sized by the first forward)"


def test_optimizer_line():
    adam = OptimizerFacts("Adam", ({"lr": 0.001, "betas": (0.9, 0.999), "weight_decay": 0},), step=120, tensors=4)
    assert optimizer_line(adam) == "Adam lr=0.001 betas=(0.9, 0.999) wd=0 step 120 (4 tensors)"
    groups = ({"lr": 0.1, "momentum": 0.9, "nesterov": True}, {"lr": 0.01, "momentum": 0.9, "nesterov": True})
    assert optimizer_line(OptimizerFacts("SGD", groups)) == "SGD 2 groups lr=[0.1, 0.01] momentum=0.9 nesterov step ?"


def test_loader_line():
    loader = LoaderFacts(batch_size=64, num_workers=0, shuffle=True, dataset_len=60000, batches=938)
    assert (
        loader_line(loader)
        == "DataLoader batch_size=64 shuffle num_workers=0 ⚠ loads in main process 60K samples 938 batches"
    )
    workers = LoaderFacts(batch_size=8, num_workers=4, shuffle=None, sampler="WeightedRandomSampler", drop_last=True)
    assert loader_line(workers) == "DataLoader batch_size=8 sampler=WeightedRandomSampler num_workers=4 drop_last"
