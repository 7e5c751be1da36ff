"""Curve diagnosis on synthetic series: each pathology is named with its evidence; healthy curves get nothing."""

import dataclasses
import math

import pytest

from tensorsight.core.curves import Series, TrainingCurves, diagnose_curves, is_spike, loss_trend

pytestmark = pytest.mark.numpy_only  # also run under Python 3.10, 3.12 and 3.13 (scripts/test.sh)

LOSS_AT = ("/project/train.py", 40)
OPTIMIZER_AT = ("/project/train.py", 20)
VALIDATION_AT = ("/project/train.py", 50)
MODEL_AT = ("/project/train.py", 38)


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
    assert found[0].step == 31 and "became NaN/Inf" in found[0].message and "31" not in found[0].message


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


def test_norms_that_grew_only_up_to_the_programs_own_clipping_threshold_are_information():
    """clip_grad_norm_(max_norm=5) already bounds every update: norms read after it that grew from 0.01 to 5 are how far
    clipping works, not the explosion the warning's advice (add clipping) is about."""
    grown = [min(0.01 * 1.08**i, 5.0) for i in range(100)]
    extra = {"clip_norm": 5.0, "grad_norm_before_clipping": 4e3}
    (clipped,) = diagnose_curves(curves(healthy_train(), grad=grown, extra=extra))
    assert (clipped.severity, clipped.details["diagnosis"]) == ("info", "clipped-gradients")
    assert "clipping threshold 5" in clipped.message and "4e+03 before clipping" in clipped.message
    above = diagnose_curves(curves(healthy_train(), grad=[g * 2 for g in grown], extra={"clip_norm": 5.0}))
    assert diagnoses(above) == ["exploding-gradients"]  # above the threshold: not the norms clipping bounds
    assert above[0].severity == "warning"


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


# ---- learning rate too high without NaN, adversarial losses, scale-aware gradients, advice from the NaN origin ----


def overshooting(n=120, first=0.99, level=13.0):
    """The first loss is the lowest: every update after it overshoots and the loss bounces around a higher level."""
    pattern = (1.7, 0.4, 1.2, 0.6, 1.5, 0.5, 0.9)
    return [first] + [level * pattern[i % len(pattern)] for i in range(n - 1)]


def test_a_loss_that_climbs_from_its_first_step_and_stays_high_is_lr_too_high_with_its_evidence():
    found = diagnose_curves(curves(overshooting(), lr=4.0))
    assert diagnoses(found) == ["diverging"]
    finding = found[0]
    assert (finding.file, finding.line) == OPTIMIZER_AT
    details = finding.details
    assert details["loss_first"] == pytest.approx(0.99) and details["loss_scale"] > 10 and details["lr"] == 4.0
    assert 0.5 <= details["confidence"] <= 0.99 and details["swing"] > 0.3
    assert "lr=4" in finding.message and "too high" in finding.message and "confidence" in finding.message


def test_a_slightly_too_high_lr_says_so_with_less_confidence_than_a_far_too_high_one():
    mild = diagnose_curves(curves(overshooting(first=5.0, level=11.0)))[0].details["confidence"]
    far = diagnose_curves(curves(overshooting(first=0.5, level=40.0)))[0].details["confidence"]
    assert mild < far


def test_a_hand_written_update_is_blamed_on_its_step_size_at_the_backward_line():
    found = diagnose_curves(dataclasses.replace(curves(overshooting(), lr=None, hand_written=True), optimizer_at=None))
    assert diagnoses(found) == ["diverging"]
    assert (found[0].file, found[0].line) == LOSS_AT and "hand-written parameter update" in found[0].message


def test_adversarial_losses_get_no_trend_verdict_but_a_nan_is_still_reported():
    bouncing = [0.5 if i % 2 else 3.0 for i in range(60)]
    assert diagnose_curves(curves(bouncing, adversarial=True)) == []
    assert diagnose_curves(curves(overshooting(), adversarial=True)) == []
    nan = diagnose_curves(curves([1.0] * 30 + [math.nan], adversarial=True, first_nonfinite_loss_step=31))
    assert diagnoses(nan) == ["diverging"]


def test_each_optimizer_is_named_in_its_verdict():
    found = diagnose_curves(curves(overshooting(), optimizer_name="optimizerG"))
    assert "training loss of `optimizerG`" in found[0].message


def test_a_loss_that_fell_at_once_and_stayed_is_not_flat():
    closure_like = [0.57, 0.05] + [0.0025 * (1 + 0.01 * (i % 3)) for i in range(30)]
    assert diagnose_curves(curves(closure_like)) == []


def test_exploding_is_judged_against_the_loss_scale_not_an_absolute_norm():
    summed_loss = noisy([2.5e4 * (1 - i / 300) for i in range(100)], 0.02)
    healthy = diagnose_curves(curves(summed_loss, grad=noisy([1.6e4] * 100, 0.1)))
    assert healthy == []
    inflated = noisy([1.5e4] * 20, 0.1)  # an amplifying deep net: loss and gradients both huge, gradients 20x more
    found = diagnose_curves(curves(inflated, grad=[3e5] * 20))
    assert "exploding-gradients" in diagnoses(found)
    details = next(f for f in found if f.details["diagnosis"] == "exploding-gradients").details
    assert details["loss_scale"] == pytest.approx(1.5e4, rel=0.1)


def origin(op, phase, line=25):
    return {
        "kind": "nonfinite",
        "file": "/project/train.py",
        "line": line,
        "message": "NaN ...",
        "details": {"op": op, "phase": phase},
    }


def test_a_nan_that_came_with_the_data_is_not_blamed_on_the_learning_rate():
    train = [1.0] * 5 + [math.nan] * 25
    found = diagnose_curves(
        curves(train, first_nonfinite_loss_step=6, nonfinite_origin=origin("torch.as_tensor", "data"))
    )
    (finding,) = found
    assert finding.details["cause"] == "data" and finding.details["origin"]["line"] == 25
    assert "came in with the data" in finding.message and "learning rate is probably too high" not in finding.message
    # the gradients went NaN with it: no "clip your gradients" advice either
    both = curves(
        train,
        first_nonfinite_loss_step=6,
        first_nonfinite_grad_step=6,
        nonfinite_origin=origin("(model input)", "data"),
    )
    assert diagnoses(diagnose_curves(both)) == ["diverging"]


def test_a_nan_born_in_log_of_zero_names_the_op_not_the_learning_rate():
    found = diagnose_curves(
        curves([1.0] * 30, first_nonfinite_loss_step=5, nonfinite_origin=origin("torch.log", "forward"))
    )
    assert found[0].details["cause"] == "domain"
    assert "`torch.log` at train.py:25" in found[0].message and "learning rate is probably" not in found[0].message


def test_an_overflow_or_an_unknown_origin_blames_the_learning_rate_only_when_the_loss_grew_first():
    growing = [1.0] * 10 + [1.5**k for k in range(1, 8)] + [float("nan")] * 13  # NaN at step 18 after growing
    for where in (origin("Tensor.mul", "forward"), None):
        found = diagnose_curves(curves(growing, lr=1.0, first_nonfinite_loss_step=18, nonfinite_origin=where))
        assert "learning rate is probably too high" in found[0].message
        assert found[0].details["cause"] == ("overflow" if where else "unknown")


def test_a_nan_out_of_a_flat_loss_never_blames_the_learning_rate():
    """A loss at its usual level until the step it went NaN (a log of an underflowed softmax after a replay could not
    name the op): nothing says the learning rate did it."""
    for where in (origin("Tensor.mul", "forward"), None):
        found = diagnose_curves(curves([1.0] * 30, lr=1.0, first_nonfinite_loss_step=18, nonfinite_origin=where))
        assert "learning rate is probably" not in found[0].message
        assert "not a likely cause" in found[0].message
        assert found[0].details["cause"] == ("overflow" if where else "not located")


def test_the_optimizer_making_the_nan_is_evidence_for_the_learning_rate():
    found = diagnose_curves(
        curves([1.0] * 30, lr=1.0, first_nonfinite_loss_step=18, nonfinite_origin=origin("Adam.step()", "optimizer"))
    )
    assert "learning rate is probably too high" in found[0].message


@pytest.mark.parametrize(
    "extra, advised, not_advised",
    [
        ({}, "add gradient clipping or a warm-up", "already"),
        ({"clip_norm": 1.0}, "or add a warm-up (the script already clips gradients)", "add gradient clipping"),
        (
            {"first_lr": 1e-5, "peak_lr": 1e-3},
            "or add gradient clipping (the script already warms up)",
            "add a warm-up",
        ),
        ({"clip_norm": 1.0, "first_lr": 1e-5, "peak_lr": 1e-3}, "already clips gradients and warms up", "add "),
        ({"first_lr": 1e-3, "peak_lr": 1e-3}, "add gradient clipping or a warm-up", "already"),  # a constant rate
    ],
)
def test_the_learning_rate_advice_leaves_out_what_the_script_already_does(extra, advised, not_advised):
    run = curves([1.0] * 30, lr=1.0, first_nonfinite_loss_step=18, nonfinite_origin=origin("Adam.step()", "optimizer"))
    (found,) = diagnose_curves(dataclasses.replace(run, extra={**run.extra, **extra}))
    assert "learning rate is probably too high" in found.message and advised in found.message
    assert not_advised not in found.message.split("too high", 1)[1]


def test_an_optimizer_without_losses_of_its_own_is_judged_against_the_runs_loss_scale():
    steps = list(range(1, 31))
    decoder = dataclasses.replace(curves([], grad=[1.6e4] * 30), grad_steps=steps)
    assert diagnoses(diagnose_curves(decoder)) == ["exploding-gradients"]  # no loss scale known: the absolute norm
    # stepped on a summed loss that another optimizer's series recorded
    assert diagnose_curves(dataclasses.replace(decoder, run_loss=[2.5e4] * 30)) == []


def test_a_diverging_loss_carries_its_gradient_symptoms_in_one_finding():
    rising = [5.0 * 1.2**i for i in range(40)]
    found = diagnose_curves(curves(rising, grad=[1.0 * 1.3**i for i in range(40)], early=[1e-6] * 40, late=[1.0] * 40))
    assert diagnoses(found) == ["diverging"]
    assert found[0].details["exploding-gradients"]["growth"] > 100
    assert found[0].details["vanishing-gradients"]["ratio"] < 1e-3


def test_curves_of_gradients_never_cleared_are_left_to_the_training_logic_finding():
    growing = curves([5.0 * 1.2**i for i in range(40)], grad=[1.3**i for i in range(40)], gradients_uncleared=True)
    assert diagnose_curves(growing) == []


def test_a_loss_nan_from_its_first_step_is_not_blamed_on_the_learning_rate():
    found = diagnose_curves(curves([math.nan] * 30, lr=1e-4, first_nonfinite_loss_step=1))
    assert found[0].details["cause"] == "before-any-update" and "learning rate is not the cause" in found[0].message


# ---- lr too high without NaN: swinging, ending above its first value while the smoothed trend falls -----------------


def swinging_after_an_early_jump(n=300, first=0.56):
    """A loss thrown up by the first updates (about 2.0), then swinging 70-130% of its level 0.75 every step: its
    smoothed trend falls (2.0 -> 0.75) but it ends above its first value (the shape of Adam at lr=0.3)."""
    jump = [first] + [2.0 * (1.0 + 0.3 * (-1) ** i) for i in range(n // 10 - 1)]
    rest = [0.75 * (1.0 + 0.45 * (-1) ** i * (1.0 + 0.2 * (i % 3))) for i in range(n - len(jump))]
    return jump + rest


def test_a_loss_swinging_and_ending_above_its_first_value_is_lr_too_high_though_its_trend_falls():
    train = swinging_after_an_early_jump()
    trend = loss_trend(train)
    assert trend is not None and trend.ratio < 0.8 and trend.swing > 0.5  # the old oscillation rule stays silent
    found = diagnose_curves(curves(train, lr=0.3))
    assert diagnoses(found) == ["oscillating"]
    finding = found[0]
    assert (finding.severity, (finding.file, finding.line)) == ("warning", OPTIMIZER_AT)
    assert "above its first value 0.56" in finding.message and "lr=0.3" in finding.message
    assert "learning rate is probably too high" in finding.message


def test_a_noisy_minibatch_loss_that_truly_learns_is_not_lr_too_high():
    # the same swings around a level that ends well below the first loss: minibatch noise on a run that learns
    train = noisy([0.56 * math.exp(-i / 120) + 0.15 for i in range(300)], 0.5)
    assert loss_trend(train).swing > 0.5
    assert diagnose_curves(curves(train, lr=3e-3)) == []


# ---- chance level from the number of classes the loss scores ---------------------------------------------------------

LOSS_CALL_AT = ("/project/train.py", 39)


def test_a_classification_loss_staying_at_ln_classes_is_training_at_chance_level_at_the_loss_call():
    train = noisy([2.31 - 0.06 * i / 150 for i in range(150)], 0.02)  # 2.31 -> 2.25, ln 10 = 2.303
    found = diagnose_curves(curves(train, extra={"classes": 10, "classification_at": LOSS_CALL_AT}))
    assert diagnoses(found) == ["at-chance"]
    finding = found[0]
    assert (finding.kind, finding.severity, (finding.file, finding.line)) == ("dynamics", "warning", LOSS_CALL_AT)
    assert "≈ ln 10 = 2.3" in finding.message and "1/10 = 10%" in finding.message
    assert "labels still match their features" in finding.message
    # without the class count the same curve is only "not decreasing"
    assert diagnoses(diagnose_curves(curves(train))) == ["not-decreasing"]


def test_a_model_that_learns_slowly_below_chance_gets_an_info_saying_how_far_from_chance():
    train = noisy([0.64 - 0.02 * i / 150 for i in range(150)], 0.02)  # 0.64 -> 0.62, chance ln 2 = 0.693
    found = diagnose_curves(curves(train, extra={"classes": 2, "classification_at": LOSS_CALL_AT}))
    assert diagnoses(found) == ["learning-slowly"]
    assert found[0].severity == "info" and "0.619 vs chance 0.693" in found[0].message
    assert diagnoses(diagnose_curves(curves(train))) == ["not-decreasing"]  # a warning without the class count


def test_a_classifier_that_learns_from_chance_is_silent():
    train = noisy([2.3 * math.exp(-i / 40) + 0.1 for i in range(150)], 0.1)
    assert diagnose_curves(curves(train, extra={"classes": 10, "classification_at": LOSS_CALL_AT})) == []


def test_evaluation_inputs_on_another_scale_explain_a_rising_validation_loss():
    train = [2.0 * math.exp(-i / 20) + 0.05 for i in range(100)]
    val = [1.0, 0.8, 0.9, 1.2, 1.5, 1.9, 2.3]
    assert diagnoses(diagnose_curves(curves(train, val=val))) == ["overfitting"]
    assert diagnose_curves(curves(train, val=val, extra={"evaluation_inputs_differ": True})) == []


# ---- first updates far too large -----------------------------------------------------------------------------------
def _overshot(ratios: list[float], first_losses: list[float]) -> TrainingCurves:
    # then a calm plateau: no other loss verdict (it fell from its first value and stays flat, no swing)
    losses = first_losses + [0.4 + 0.001 * (i % 2) for i in range(200)]
    return TrainingCurves(
        train_loss=losses,
        train_steps=list(range(1, len(losses) + 1)),
        lr=0.125,
        optimizer_at=("train.py", 68),
        loss_at=("train.py", 40),
        extra={"early_update_ratios": ratios, "peak_lr": 0.5},
    )


def test_first_updates_far_too_large_with_an_early_loss_jump_are_found_at_the_optimizer():
    curves = _overshot([0.30, 1.20, 0.80, 0.44, 0.28, 0.20, 0.15, 0.52, 0.30, 0.25], [2.38, 6.24, 2.06, 1.52, 14.9])
    (finding,) = diagnose_curves(curves)
    assert (finding.kind, finding.severity, finding.file, finding.line) == ("dynamics", "warning", "train.py", 68)
    assert finding.details["diagnosis"] == "overshooting" and finding.details["lr"] == 0.5
    assert finding.details["loss_early_peak"] == 14.9 and "(lr=0.5)" in finding.message


def test_small_updates_or_no_early_jump_or_a_closure_free_hand_update_are_silent():
    healthy = _overshot([0.006, 0.011, 0.016, 0.021, 0.023, 0.025], [2.38, 2.03, 2.37, 2.18, 1.37])
    no_jump = _overshot([0.30, 0.40, 0.35, 0.30], [2.38, 2.03, 2.37, 2.18, 1.37])  # large steps, loss only falls
    hand = dataclasses.replace(_overshot([0.30, 1.20, 0.80], [2.38, 6.24, 14.9]), hand_written=True)
    too_few = _overshot([0.30, 1.20], [2.38, 6.24, 14.9])
    assert [diagnose_curves(c) for c in (healthy, no_jump, hand, too_few)] == [[], [], [], []]


def test_updates_of_a_quarter_of_the_weights_need_only_a_tenth_more_loss_to_confirm_them():
    """A warm-up that ramps Adam to steps of a third of the weights: the loss swings 15% above its start, no more."""
    ramped = [0.32, 0.43, 0.46, 0.43, 0.37, 0.30, 0.24, 0.20, 0.18, 0.15]
    (finding,) = diagnose_curves(_overshot(ramped, [3.10, 3.03, 3.38, 2.98, 3.53, 2.88]))
    assert finding.details["diagnosis"] == "overshooting"
    smooth = _overshot([0.26, 0.28, 0.25, 0.27, 0.26], [1.39, 1.38, 1.36, 1.35, 1.33])  # full-batch, falling steadily
    tenth = _overshot([0.12, 0.13, 0.12, 0.11], [3.10, 3.03, 3.38, 2.98, 3.53])  # smaller updates: 1.5x needed
    assert diagnose_curves(smooth) == [] and diagnose_curves(tenth) == []
