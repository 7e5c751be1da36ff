"""``agent.measurement.frameworks`` (what the frameworks hand back, read by duck typing) and the chance-level diagnosis
of ``core.curves`` it feeds, in this process on real torch objects; the global hooks each test installs are taken
out again before it ends."""

from __future__ import annotations

import inspect
import math
import sys
import warnings
from collections import OrderedDict

import pytest
import torch

from tensorsight.agent.measurement.frameworks import (
    ClipWatch,
    FrameworkWatch,
    StepCalls,
    closure_of,
    model_output_classes,
    model_output_loss,
)
from tensorsight.core.curves import CHANCE_FACTOR, TrainingCurves, diagnose_chance_level, diagnose_curves

WHERE = ("train.py", 12)


def test_the_loss_a_model_puts_in_its_output_is_read():
    loss = torch.tensor(2.5, requires_grad=True) * 1.0  # a graph hangs off it, as in training
    output = OrderedDict(loss=loss, logits=torch.zeros(2, 5, 100))
    assert model_output_loss(torch, output) == 2.5
    assert model_output_loss(torch, {"loss": torch.tensor(1.0)}) == 1.0
    assert model_output_loss(torch, {"logits": torch.zeros(2, 3)}) is None  # called without labels
    assert model_output_loss(torch, {"loss": torch.ones(3)}) is None  # not a scalar
    assert model_output_loss(torch, torch.tensor(1.0)) is None  # a plain tensor is a loss module's business
    assert loss.grad_fn is not None and loss._version == 0


def test_the_classes_a_models_loss_scores_come_from_its_logits():
    output = {"loss": torch.tensor(4.6), "logits": torch.zeros(2, 5, 100)}
    assert model_output_classes(torch, output) == 100
    assert model_output_classes(torch, {"logits": torch.zeros(2, 100)}) is None  # no loss next to them
    assert model_output_classes(torch, {"loss": torch.tensor(1.0), "logits": torch.zeros(4, 1)}) is None  # regression
    assert model_output_classes(torch, (torch.zeros(2, 100),)) is None


def test_a_transformers_model_output_is_read_like_any_mapping():
    modeling_outputs = pytest.importorskip("transformers.modeling_outputs", reason="transformers is not installed")
    output = modeling_outputs.CausalLMOutput(loss=torch.tensor(4.61), logits=torch.zeros(1, 8, 100))
    assert model_output_loss(torch, output) == pytest.approx(4.61)
    assert model_output_classes(torch, output) == 100


def test_the_closure_of_a_step_call():
    def closure() -> float:
        return 0.0

    assert closure_of((closure,), {}) is closure
    assert closure_of((), {"closure": closure}) is closure
    assert closure_of((), {}) is None and closure_of((None,), {}) is None


def test_step_calls_tell_a_closure_step_from_a_plain_one_and_keep_the_peak_lr():
    weight = torch.nn.Parameter(torch.ones(3))
    optimizer = torch.optim.SGD([weight], lr=0.1)
    watch = StepCalls()
    watch.register(torch)
    try:

        def closure() -> torch.Tensor:
            optimizer.zero_grad()
            loss = (weight * weight).sum()
            loss.backward()
            return loss

        optimizer.step(closure)
        assert watch.ran_closure(optimizer)
        optimizer.step()
        assert not watch.ran_closure(optimizer)
        optimizer.param_groups[0]["lr"] = 0.01  # a schedule decays it: the peak stays
        optimizer.step()
        assert watch.peak_lr == 0.1
    finally:
        watch.remove()
    optimizer.step(closure)
    assert not watch.ran_closure(optimizer)  # removed: the hook is gone


def _without_our_wrappers(function: object) -> object:
    """torch's own function under any TensorSight wrapper an earlier in-process test left installed (wrappers carry a
    ``__tensorsight…`` mark; torch's own decorators do not)."""
    return inspect.unwrap(function, stop=lambda f: not any(k.startswith("__tensorsight") for k in vars(f)))  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def torch_clip_functions(monkeypatch):
    """Each test starts from torch's own clip functions, whatever wrappers other tests of the session left."""
    import torch.nn.utils.clip_grad as clip_grad

    for owner in (clip_grad, torch.nn.utils):
        for name in ("clip_grad_norm_", "clip_grad_value_"):
            if hasattr(owner, name):
                monkeypatch.setattr(owner, name, _without_our_wrappers(getattr(owner, name)))


def test_clip_watch_keeps_the_norm_before_clipping_and_clips_as_before():
    weight = torch.nn.Parameter(torch.zeros(2))
    original = torch.nn.utils.clip_grad_norm_
    watch = ClipWatch(torch)
    watch.install()
    try:
        assert torch.nn.utils.clip_grad_norm_ is not original
        assert torch.nn.utils.clip_grad.clip_grad_norm_ is torch.nn.utils.clip_grad_norm_
        weight.grad = torch.tensor([300.0, 400.0])
        total = torch.nn.utils.clip_grad_norm_([weight], 1.0)
        assert float(total) == 500.0 and math.isclose(float(weight.grad.norm()), 1.0, rel_tol=1e-5)
        weight.grad = torch.tensor([3.0, 4.0])
        torch.nn.utils.clip_grad_norm_([weight], max_norm=float("inf"))  # a norm read, no clipping
        assert (watch.calls, watch.peak, watch.peak_clip) == (2, 500.0, 1.0)
    finally:
        watch.uninstall()
    assert torch.nn.utils.clip_grad_norm_ is original and torch.nn.utils.clip_grad.clip_grad_norm_ is original


def test_a_warning_from_inside_clip_grad_norm_keeps_the_programs_location():
    watch = ClipWatch(torch)
    watch.install()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            line = sys._getframe().f_lineno + 1
            torch.nn.utils.clip_grad_norm_((p for p in ()), 1.0)  # torch warns at its caller: an empty generator
    finally:
        watch.uninstall()
    (warning,) = caught
    assert "empty generator" in str(warning.message)
    assert (warning.filename, warning.lineno) == (__file__, line)


def _curves(losses: list[float], **extra: object) -> TrainingCurves:
    return TrainingCurves(
        train_loss=losses, train_steps=list(range(1, len(losses) + 1)), lr=156.0, loss_at=WHERE, extra=dict(extra)
    )


def test_a_cross_entropy_far_above_chance_is_a_finding():
    losses = [4.5] + [4e8 * 0.9**i for i in range(23)]  # blown up at step 2, then pulled down by the schedule
    (finding,) = diagnose_chance_level(
        _curves(losses, classes=100, peak_lr=5e3, grad_norm_before_clipping=1.4e5, clip_norm=1.0)
    )
    assert (finding.kind, finding.severity, finding.file, finding.line) == ("dynamics", "warning", *WHERE)
    assert finding.details["diagnosis"] == "above-chance" and finding.details["lr"] == 5e3
    assert finding.details["chance_level"] == round(math.log(100), 6)
    assert "(lr=5e+03)" in finding.message and "1.4e+05 before clipping to 1" in finding.message
    # the loss already falls: the curve's own verdicts say nothing, the chance level does
    assert [f.details["diagnosis"] for f in diagnose_curves(_curves(losses, classes=100))] == ["above-chance"]


def test_a_loss_near_or_below_chance_and_a_loss_without_classes_are_not():
    near = [math.log(100) * (CHANCE_FACTOR - 1)] * 24  # bad, but within the factor
    assert diagnose_chance_level(_curves(near, classes=100)) == []
    assert diagnose_chance_level(_curves([1e8] * 24)) == []  # no class count: a regression loss can be anything
    assert diagnose_chance_level(_curves([1e8] * 10, classes=100)) == []  # too few steps to judge


def test_one_loss_verdict_when_the_loss_also_diverges():
    rising = [4.6 * 10 ** (i / 4) for i in range(24)]
    kinds = [f.details["diagnosis"] for f in diagnose_curves(_curves(rising, classes=100))]
    assert kinds == ["above-chance"]  # the more specific of the two
    went_inf = _curves([*rising, math.inf], classes=100)
    went_inf.first_nonfinite_loss_step = 25
    assert [f.details["diagnosis"] for f in diagnose_curves(went_inf)] == ["diverging"]  # the NaN/Inf verdict


def test_the_framework_watch_hands_the_curves_what_it_saw():
    weight = torch.nn.Parameter(torch.ones(2))
    optimizer = torch.optim.SGD([weight], lr=0.5)
    watch = FrameworkWatch(torch)
    watch.install()
    try:
        weight.grad = torch.tensor([30.0, 40.0])
        torch.nn.utils.clip_grad_norm_([weight], 1.0)
        optimizer.step()
    finally:
        watch.uninstall()
    assert watch.curve_extra(100) == {
        "peak_lr": 0.5,
        "first_lr": 0.5,
        "classes": 100,
        "grad_norm_before_clipping": 50.0,
        "clip_norm": 1.0,
    }
    assert watch.curve_extra(None) == {
        "peak_lr": 0.5,
        "first_lr": 0.5,
        "grad_norm_before_clipping": 50.0,
        "clip_norm": 1.0,
    }


class _FakeTime:
    """A program clock that moves only when told: phase seconds become exact, not timed."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_closure_steps_forward_and_backward_time_is_not_counted_again_as_optimizer_time():
    from tensorsight.agent.measurement.phases import PhaseClock

    time = _FakeTime()

    class Slow(torch.nn.Module):  # its forward takes 0.5 s of the fake clock, its backward 0.25 s
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            time.now += 0.5
            return (self.weight * x).sum()

    clock = PhaseClock(torch)
    clock._clock = time
    records = []
    clock.step_listeners.append(records.append)
    clock.install()
    try:
        model = Slow()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

        def closure() -> torch.Tensor:  # what Lightning's automatic optimisation hands optimizer.step
            optimizer.zero_grad()
            loss = model(torch.ones(3))
            loss.register_hook(lambda grad: setattr(time, "now", time.now + 0.25))
            loss.backward()
            return loss

        for _ in range(2):
            optimizer.step(closure)
    finally:
        clock.uninstall()
    assert len(records) == 2
    for record in records:
        assert (record.seconds["forward"], record.seconds["backward"]) == (0.5, 0.25)
        assert record.seconds["optimizer"] == 0.0  # the update itself took no fake time (before: 0.75)
    assert records[0].losses == [3.0] and records[1].losses == [pytest.approx(2.7)]  # each step's own closure loss
