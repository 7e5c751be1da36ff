"""Curve diagnosis on synthetic series: each pathology is named with its evidence; healthy curves get nothing."""

import math

import pytest

from tensorsight.core.curves import Series, TrainingCurves, diagnose_curves, is_spike, loss_trend

pytestmark = pytest.mark.numpy_only  # also run under Python 3.10, 3.12 and 3.13 (scripts/test.sh)

LOSS_AT = ("/work/train.py", 40)
OPTIMIZER_AT = ("/work/train.py", 20)
VALIDATION_AT = ("/work/train.py", 50)
MODEL_AT = ("/work/train.py", 38)


def noisy(values, amplitude=0.05):
    """Deterministic minibatch-like noise (no RNG): a fixed zig-zag pattern scaled to the value."""
    pattern = (1.0, -0.6, 0.3, -0.9, 0.7, -0.2)
    return [v * (1.0 + amplitude * pattern[i % len(pattern)]) for i, v in enumerate(values)]


def curves(train, val=None, val_every=10, grad=None, early=None, late=None, lr=1e-3, **extra):
    steps = list(range(1, len(train) + 1))
    val = val or []
    grad = grad if grad is not None else [1.0] * len(train)
    return TrainingCurves(
        train_loss=train,
        train_steps=steps,
        val_loss=val,
        val_steps=[val_every * (i + 1) for i in range(len(val))],
        grad_norm=grad,
        grad_steps=steps[: len(grad)],
        early_layer="0.weight" if early else None,
        late_layer="4.weight" if late else None,
        early_grad_norm=early or [],
        late_grad_norm=late or [],
        lr=lr,
        loss_at=LOSS_AT,
        optimizer_at=OPTIMIZER_AT,
        validation_at=VALIDATION_AT,
        model_at=MODEL_AT,
        **extra,
    )


def diagnoses(found):
    return sorted(f.details["diagnosis"] for f in found)


def healthy_train(n=100):
    return noisy([2.3 * math.exp(-i / 30) + 0.2 for i in range(n)])


def test_a_healthy_run_gets_no_dynamics_finding():
    val = [2.0 * math.exp(-i / 3) + 0.3 for i in range(10)]
    early = [0.05 * (1 + 0.1 * (i % 3)) for i in range(100)]
    late = [0.4 * (1 + 0.1 * (i % 2)) for i in range(100)]
    grad = noisy([1.0 + 0.5 * math.sin(i / 5) for i in range(100)], 0.2)
    assert diagnose_curves(curves(healthy_train(), val=val, grad=grad, early=early, late=late)) == []


def test_a_flat_loss_is_not_decreasing_and_names_lr_and_bugs_at_the_optimizer_line():
    found = diagnose_curves(curves(noisy([5.31] * 120, 0.02), lr=1e-6))
    assert diagnoses(found) == ["not-decreasing"]
    finding = found[0]
    assert (finding.kind, finding.severity, (finding.file, finding.line)) == ("dynamics", "warning", OPTIMIZER_AT)
    assert "lr=1e-06" in finding.message and "learning rate is too low" in finding.message
    assert "optimizer.step()" in finding.message
    assert finding.details["steps"] == 120


def test_a_rising_loss_is_diverging_lr_too_high():
    found = diagnose_curves(curves([60 * 1.3**i for i in range(40)], lr=0.12))
    assert diagnoses(found) == ["diverging"]
    assert "too high" in found[0].message and found[0].details["loss_end"] > found[0].details["loss_start"]


def test_a_nonfinite_loss_is_diverging_at_its_step():
    train = [1.0] * 30 + [math.inf, math.nan]
    found = diagnose_curves(curves(train, first_nonfinite_loss_step=31))
    assert diagnoses(found) == ["diverging"]
    assert found[0].step == 31 and "NaN/Inf at step 31" in found[0].message


def test_a_loss_bouncing_without_progress_is_oscillating():
    train = [0.5 if i % 2 else 3.0 for i in range(60)]
    found = diagnose_curves(curves(train))
    assert diagnoses(found) == ["oscillating"]
    assert found[0].details["direction_changes"] > 0.9


def test_noisy_but_falling_minibatch_loss_is_not_oscillating():
    train = noisy([3.0 * math.exp(-i / 20) + 0.1 for i in range(100)], 0.45)
    assert diagnose_curves(curves(train)) == []


def test_too_few_steps_say_nothing_about_the_loss():
    assert diagnose_curves(curves([5.0] * 12)) == []


def test_validation_rising_while_training_falls_is_overfitting_at_the_validation_line():
    train = [10.0 * math.exp(-i / 10) for i in range(100)]
    val = [20, 15, 12, 11, 12.5, 13.5, 14.5, 15.5, 16, 16.5]
    found = diagnose_curves(curves(train, val=val))
    assert diagnoses(found) == ["overfitting"]
    finding = found[0]
    assert (finding.file, finding.line) == VALIDATION_AT
    assert finding.details["val_best_step"] == 40 and finding.details["val_best"] == 11
    assert "stop early around step 40" in finding.message


def test_validation_dip_or_both_rising_is_not_overfitting():
    train = [10.0 * math.exp(-i / 10) for i in range(100)]
    dip = [20, 15, 12, 11, 13, 11.2, 11.1, 10.9, 10.8, 10.7]
    assert diagnose_curves(curves(train, val=dip)) == []
    rising_train = [1.0 + 0.01 * i for i in range(100)]
    u_shape = [20, 15, 12, 11, 12.5, 13.5, 14.5, 15.5, 16, 16.5]
    assert "overfitting" not in diagnoses(diagnose_curves(curves(rising_train, val=u_shape)))


def test_first_layer_gradients_orders_of_magnitude_below_the_last_are_vanishing():
    early = [4e-11] * 30
    late = [0.4] * 30
    found = diagnose_curves(curves(healthy_train(30), early=early, late=late))
    assert diagnoses(found) == ["vanishing-gradients"]
    finding = found[0]
    assert (finding.file, finding.line) == MODEL_AT
    assert finding.details["early_layer"] == "0.weight" and finding.details["ratio"] < 1e-9


def test_comparable_layer_gradients_are_not_vanishing():
    assert diagnose_curves(curves(healthy_train(30), early=[0.01] * 30, late=[0.4] * 30)) == []


def test_huge_growing_or_nonfinite_gradient_norms_are_exploding_at_the_backward_line():
    huge = diagnose_curves(curves(healthy_train(), grad=[3e5] * 100))
    assert diagnoses(huge) == ["exploding-gradients"]
    assert (huge[0].file, huge[0].line) == LOSS_AT and "clip_grad_norm_" in huge[0].message
    growing = diagnose_curves(curves(healthy_train(), grad=[1.0 * 1.08**i for i in range(100)]))
    assert diagnoses(growing) == ["exploding-gradients"]
    assert growing[0].details["peak_step"] == 100
    nonfinite = diagnose_curves(curves(healthy_train(), first_nonfinite_grad_step=7))
    assert diagnoses(nonfinite) == ["exploding-gradients"] and nonfinite[0].step == 7


def test_without_any_user_line_nothing_is_reported():
    blank = TrainingCurves(train_loss=[5.0] * 50, train_steps=list(range(50)), grad_norm=[1e6] * 50)
    assert diagnose_curves(blank) == []


def test_trend_is_robust_to_single_outliers():
    values = [2.0] * 50
    values[-1] = 100.0
    trend = loss_trend(values)
    assert trend is not None and trend.end == 2.0 and trend.start == 2.0


def test_series_stays_bounded_and_keeps_the_ends():
    series = Series(limit=64)
    for step in range(1, 10_001):
        series.add(step, float(step))
    assert len(series) <= 64
    assert series.steps[0] == 1 and series.steps[-1] > 9_800
    assert series.steps == sorted(series.steps)
    series.add(10_001, math.nan)
    assert series.first_nonfinite_step == 10_001


def test_spike_needs_a_jump_above_the_recent_level_and_the_floor():
    recent = [1.0, 1.1, 0.9, 1.05, 0.95, 1.0]
    assert is_spike(recent, 4.0)
    assert not is_spike(recent, 2.0)
    assert not is_spike(recent[:3], 10.0)
    tiny = [1e-6, 1.1e-6, 0.9e-6, 1e-6, 1e-6]
    assert is_spike(tiny, 1e-5) and not is_spike(tiny, 1e-5, floor=0.01)
