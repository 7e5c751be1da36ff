"""``agent.measurement.pipeline``: the launch options it reads, and the per-step pipeline on a real training loop.

The pipeline runs in this process on a tiny model: its global hooks and wrappers are taken out again by
``Measurement.stop``; the shared step counter's torch hook goes into a swapped-in hook dict and fresh counter state,
so nothing of it survives the test (the same isolation as tests/agent/runtime/test_steps.py).
"""

from __future__ import annotations

import collections
import dataclasses
import inspect
import logging
import os
import sys

import pytest
import torch
import torch.optim.optimizer as torch_optimizer
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch import nn

from tensorsight.agent.measurement import memory, pipeline
from tensorsight.agent.measurement.pipeline import Measurement, MeasureSettings, read_settings
from tensorsight.agent.measurement.training_log import DEFAULT_LOGGER
from tensorsight.agent.runtime import events, guard, options, steps
from tensorsight.core.phases import PHASES
from tensorsight.core.protocol import option_default


@pytest.fixture
def launch_options(monkeypatch):
    monkeypatch.setattr(guard, "_reported", set())

    def use(values):
        monkeypatch.setattr(options, "_cache", dict(values))

    return use


def test_the_defaults_are_the_contracts(launch_options):
    launch_options({})
    settings = read_settings()
    assert settings == MeasureSettings()
    assert settings.scalars_every == option_default("scalarsEvery")
    assert settings.histogram_every == option_default("histogramEvery")
    assert settings.data_share_threshold == option_default("dataShareThreshold")


def test_options_are_read_with_their_types(launch_options, tmp_path):
    launch_options(
        {
            "phases": "off",
            "scalarsEvery": "5",
            "gradNormsPerParameter": False,
            "histogramEvery": 0,
            "memory": "no",
            "traceMemory": "on",
            "logFile": str(tmp_path / "logs" / "train.log"),
            "logLevel": "debug",
            "tensorboardDir": "~/runs",
            "diagnoseCurves": "1",
            "dataShareThreshold": "0.3",
        }
    )
    assert read_settings() == MeasureSettings(
        phases=False,
        scalars_every=5,
        grad_norms_per_parameter=False,
        histogram_every=0,
        memory=False,
        trace_memory=True,
        log_file=str(tmp_path / "logs" / "train.log"),
        log_level="DEBUG",
        tensorboard_dir=os.path.abspath(os.path.expanduser("~/runs")),
        diagnose_curves=True,
        data_share_threshold=0.3,
    )


def test_wrong_values_fall_back_to_the_default_with_one_message_each(launch_options, capsys):
    launch_options(
        {
            "phases": "maybe",
            "scalarsEvery": True,
            "histogramEvery": "often",
            "logFile": 3,
            "dataShareThreshold": 1.5,
        }
    )
    settings = read_settings()
    assert settings.phases is True and settings.scalars_every == 1 and settings.histogram_every == 100
    assert settings.log_file is None and settings.data_share_threshold == option_default("dataShareThreshold")
    err = capsys.readouterr().err
    for name in ("phases", "scalarsEvery", "histogramEvery", "logFile", "dataShareThreshold"):
        assert err.count(f"option {name} ") == 1, name


def test_a_negative_count_turns_the_feature_off(launch_options, capsys):
    launch_options({"histogramEvery": -3})
    assert read_settings().histogram_every == 0
    assert "cannot be negative" in capsys.readouterr().err


def test_arm_does_nothing_when_measure_is_off(launch_options, monkeypatch):
    # on by default (a plain F5 on "Debug Training" measures); "options": {"measure": false} turns it off
    assert option_default("measure") is True
    monkeypatch.setattr(pipeline, "_armed", False)
    monkeypatch.setattr(steps, "_armed", False)
    launch_options({"measure": False})
    pipeline.arm("debugger")
    assert pipeline._armed is False and steps._armed is False and pipeline.current() is None


# ---- the per-step pipeline on a real loop ----------------------------------------------------------------------------


@pytest.fixture
def isolated_torch_hooks(monkeypatch, tmp_path):
    monkeypatch.setattr(torch_optimizer, "_global_optimizer_post_hooks", collections.OrderedDict())
    monkeypatch.setattr(steps, "_step", 0)
    monkeypatch.setattr(steps, "_per_optimizer", {})
    monkeypatch.setattr(steps, "_listeners", [])
    monkeypatch.setattr(steps, "_armed", False)
    monkeypatch.setattr(memory, "_monitor", None)
    monkeypatch.setattr(memory, "_eval_with_grad", None)
    steps.arm("test")
    yield
    logger = logging.getLogger(DEFAULT_LOGGER)
    for handler in list(logger.handlers):
        if isinstance(handler, logging.FileHandler) and handler.baseFilename.startswith(str(tmp_path)):
            logger.removeHandler(handler)
            handler.close()


def train(steps_to_run: int) -> tuple[nn.Module, list[float]]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    inputs, targets = torch.randn(16, 4), torch.randn(16, 1)
    losses = []
    for _ in range(steps_to_run):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return model, losses


def test_each_step_publishes_phases_scalars_histograms_and_writes_the_files(isolated_torch_hooks, tmp_path):
    settings = dataclasses.replace(
        MeasureSettings(),
        histogram_every=2,
        memory=False,
        log_file=str(tmp_path / "train.log"),
        tensorboard_dir=str(tmp_path / "tb"),
    )
    seen: list[dict] = []
    unsubscribe = events.subscribe(seen.append)
    measurement = Measurement(torch, settings)
    measurement.start()
    try:
        model, losses = train(3)
        measurement.finish()
        measurement.finish()  # once only
    finally:
        measurement.stop()
        unsubscribe()

    phases = [e for e in seen if e["type"] == "phases"]
    assert [e["step"] for e in phases] == [1, 2, 3]
    assert all(set(e["seconds"]) == set(PHASES) and min(e["seconds"].values()) >= 0 for e in phases)
    scalars = [e for e in seen if e["type"] == "scalars"]
    assert [(e["step"], e["split"]) for e in scalars] == [(1, "train"), (2, "train"), (3, "train")]
    assert [e["values"]["loss"] for e in scalars] == pytest.approx(losses)
    assert all(e["values"]["lr"] == 0.05 and e["values"]["grad_norm"] > 0 for e in scalars)
    assert {"grad_norm/0.weight", "grad_norm/2.bias"} <= set(scalars[0]["values"])
    histograms = [e for e in seen if e["type"] == "histogram"]
    assert {e["step"] for e in histograms} == {1, 2}  # the first step, then histogramEvery=2
    assert {(e["name"], e["kind"]) for e in histograms} == {
        (name, kind) for name, _ in model.named_parameters() for kind in ("weight", "grad")
    }
    assert sum(1 for e in seen if e["type"] == "phase-summary") == 1
    assert measurement.curves().train_loss == pytest.approx(losses)

    log = (tmp_path / "train.log").read_text(encoding="utf-8")
    assert [line.split("step ")[1].split()[0] for line in log.splitlines() if " step " in line] == ["1", "2", "3"]
    accumulator = EventAccumulator(str(tmp_path / "tb"), size_guidance={"scalars": 0, "histograms": 0})
    accumulator.Reload()
    tags = accumulator.Tags()
    assert {"train/loss", "train/lr", "grad_norm/0.weight", "time/forward_ms"} <= set(tags["scalars"])
    assert [e.value for e in accumulator.Scalars("train/loss")] == pytest.approx(losses)
    assert "weights/0.weight" in tags["histograms"] and "grads/0.weight" in tags["histograms"]


def test_after_stop_the_loop_runs_unobserved(isolated_torch_hooks):
    backward = torch.autograd.backward
    measurement = Measurement(torch, dataclasses.replace(MeasureSettings(), memory=False))
    measurement.start()
    measurement.stop()
    assert torch.autograd.backward is backward
    seen: list[dict] = []
    unsubscribe = events.subscribe(seen.append)
    try:
        train(2)
    finally:
        unsubscribe()
    assert [e for e in seen if e["type"] in ("phases", "scalars", "histogram")] == []


def test_measuring_is_a_good_guest(isolated_torch_hooks):
    settings = dataclasses.replace(MeasureSettings(), histogram_every=1, memory=False)
    torch.manual_seed(0)
    unmeasured, expected_losses = train(2)
    measurement = Measurement(torch, settings)
    measurement.start()
    try:
        torch.manual_seed(0)
        rng_after_seed = torch.get_rng_state()
        measured, losses = train(2)
        rng_after = torch.get_rng_state()
    finally:
        measurement.stop()
    torch.manual_seed(0)
    train(2)
    assert torch.equal(rng_after, torch.get_rng_state())  # no RNG draw of ours in between
    assert not torch.equal(rng_after, rng_after_seed)  # (the loop itself drew: the check is not vacuous)
    assert losses == expected_losses  # same numbers as an unmeasured run
    for p, q in zip(measured.parameters(), unmeasured.parameters(), strict=True):
        assert torch.equal(p, q) and p._version == q._version and p.grad.grad_fn is None


# ---- a training step however it is written ---------------------------------------------------------------------------


def measured(settings=None):
    """A started Measurement (memory off) and the events it publishes; call ``done()`` to finish and take it out."""
    settings = settings or dataclasses.replace(MeasureSettings(), memory=False, histogram_every=0)
    seen: list[dict] = []
    unsubscribe = events.subscribe(seen.append)
    measurement = Measurement(torch, settings)
    measurement.start()

    def done():
        try:
            measurement.finish()
        finally:
            measurement.stop()
            unsubscribe()

    return measurement, seen, done


def line_of_text(text: str) -> int:
    with open(__file__, encoding="utf-8") as handle:
        (number,) = [n for n, line in enumerate(handle, start=1) if line.strip() == text]
    return number


def train_by_hand(steps_to_run: int, lr: float = 0.05, in_place: str = "data") -> tuple[nn.Module, list[float]]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    inputs, targets = torch.randn(16, 4), torch.randn(16, 1)
    losses = []
    for _ in range(steps_to_run):
        model.zero_grad()
        loss = nn.functional.mse_loss(model(inputs), targets)
        if in_place == "data":
            loss.backward()
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
        else:
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= lr * p.grad
        losses.append(loss.item())
    return model, losses


@pytest.mark.parametrize("in_place", ["data", "no_grad"])
def test_a_hand_written_update_is_a_step_with_its_loss_and_gradient_norms(isolated_torch_hooks, in_place):
    unmeasured, expected = train_by_hand(5, in_place=in_place)
    measurement, seen, done = measured()
    try:
        model, losses = train_by_hand(5, in_place=in_place)
    finally:
        done()
    assert steps.current_step() == 5
    scalars = [e for e in seen if e["type"] == "scalars"]
    assert [e["step"] for e in scalars] == [1, 2, 3, 4, 5]
    assert [e["values"]["loss"] for e in scalars] == pytest.approx(losses)
    assert all(e["values"]["grad_norm"] > 0 and "lr" not in e["values"] for e in scalars)
    assert losses == expected  # a good guest: same numbers, same parameters, no version bump of ours
    for p, q in zip(model.parameters(), unmeasured.parameters(), strict=True):
        assert torch.equal(p, q) and p._version == q._version
    (curves,) = measurement.curves_per_optimizer()
    assert curves.hand_written and curves.lr is None
    update = "p.data.add_(p.grad, alpha=-lr)" if in_place == "data" else "p -= lr * p.grad"
    assert curves.optimizer_at == (__file__, line_of_text(update))  # verdicts go to the update's own line


def test_backward_without_any_update_is_no_step(isolated_torch_hooks):
    _measurement, seen, done = measured()
    try:
        model = nn.Linear(4, 1)
        for _ in range(3):
            model.zero_grad()
            model(torch.randn(8, 4)).pow(2).mean().backward()  # gradients inspected, never applied
    finally:
        done()
    assert steps.current_step() == 0 and not [e for e in seen if e["type"] == "scalars"]


def test_a_closure_optimizer_step_is_one_step_whose_loss_is_the_closures_first(isolated_torch_hooks):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 1))
    x = torch.linspace(-2, 2, 32).unsqueeze(1)
    y = torch.sin(x)
    optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4)
    firsts: list[float] = []
    evaluations = 0
    _measurement, seen, done = measured()
    try:
        for _ in range(4):
            first_of_step = [True]

            def closure(first_of_step=first_of_step):
                nonlocal evaluations
                optimizer.zero_grad()
                loss = nn.functional.mse_loss(model(x), y)
                loss.backward()
                evaluations += 1
                if first_of_step[0]:
                    first_of_step[0] = False
                    firsts.append(loss.item())
                return loss

            optimizer.step(closure)
    finally:
        done()
    assert evaluations > 8  # several forwards and backwards per step ...
    phases = [e for e in seen if e["type"] == "phases"]
    assert [e["step"] for e in phases] == [1, 2, 3, 4]  # ... and one step each
    losses = [e["values"]["loss"] for e in seen if e["type"] == "scalars"]
    assert losses == pytest.approx(firsts)


def gan_iterations(n: int, coupled: bool = True):
    """D then G, each with its own optimizer; ``coupled=False`` trains two unrelated models in turn instead."""
    torch.manual_seed(0)
    netG = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2))
    netD = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1), nn.Sigmoid())
    optimizerD = torch.optim.Adam(netD.parameters(), lr=1e-3)
    optimizerG = torch.optim.Adam(netG.parameters(), lr=1e-3)
    bce = nn.BCELoss()
    d_losses, g_losses = [], []
    for _ in range(n):
        real, noise = torch.randn(16, 2) + 3.0, torch.randn(16, 2)
        netD.zero_grad()
        err_real = bce(netD(real), torch.ones(16, 1))
        err_real.backward()
        fake = netG(noise)
        err_fake = bce(netD(fake.detach()), torch.zeros(16, 1))
        err_fake.backward()
        optimizerD.step()
        netG.zero_grad()
        err_g = bce(netD(fake), torch.ones(16, 1)) if coupled else fake.pow(2).mean()
        err_g.backward()
        optimizerG.step()
        d_losses.append((err_real.item() + err_fake.item()) / 2)
        g_losses.append(err_g.item())
    return d_losses, g_losses


def test_two_optimizers_have_one_series_each_and_a_gan_pair_is_adversarial(isolated_torch_hooks):
    measurement, _seen, done = measured()
    try:
        d_losses, g_losses = gan_iterations(6)
    finally:
        done()
    by_name = {c.optimizer_name: c for c in measurement.curves_per_optimizer()}
    assert set(by_name) == {"optimizerD", "optimizerG"}
    assert list(by_name["optimizerD"].train_loss) == pytest.approx(d_losses)  # both of D's backwards, averaged
    assert list(by_name["optimizerG"].train_loss) == pytest.approx(g_losses)
    assert by_name["optimizerD"].adversarial and by_name["optimizerG"].adversarial
    assert by_name["optimizerD"].optimizer_at != by_name["optimizerG"].optimizer_at


def test_two_unrelated_optimizers_are_not_adversarial(isolated_torch_hooks):
    measurement, _seen, done = measured()
    try:
        gan_iterations(6, coupled=False)
    finally:
        done()
    every = measurement.curves_per_optimizer()
    assert len(every) == 2 and not any(c.adversarial for c in every)


def test_loss_spikes_are_judged_per_optimizer(tmp_path):
    from tensorsight.agent.measurement.training_log import TrainingLog

    seen: list[dict] = []
    unsubscribe = events.subscribe(seen.append)
    try:
        log = TrainingLog(None)
        for step in range(1, 30):  # a discriminator near 0.3 and a generator near 3.0, alternating
            log.step(step, 0.3 + 0.01 * (step % 3), None, None, series="D")
            log.step(step, 3.0 + 0.1 * (step % 3), None, None, series="G")
        assert not [e for e in seen if e["type"] == "log"]
        shared = TrainingLog(None)
        for step in range(1, 30):
            shared.step(step, 0.3 + 0.01 * (step % 3), None, None)
            shared.step(step, 3.0 + 0.1 * (step % 3), None, None)
        assert [e for e in seen if e["type"] == "log" and "spike" in e["message"]]  # one shared series: spikes
        quiet = TrainingLog(None)
        seen.clear()
        for step in range(1, 30):
            quiet.step(step, 0.3 if step % 7 else 5.0, None, None, series="G", spikes=False)
        assert not seen
    finally:
        unsubscribe()


def test_deliberate_accumulation_and_cleared_gans_are_not_uncleared_gradients(isolated_torch_hooks):
    _measurement, seen, done = measured()
    try:
        gan_iterations(5)
        torch.manual_seed(0)
        model = nn.Linear(4, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for batch in range(12):
            model(torch.randn(8, 4)).pow(2).mean().div(4).backward()
            if (batch + 1) % 4 == 0:
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()
    finally:
        done()
    findings = [e["finding"] for e in seen if e["type"] == "finding"]
    assert not [f for f in findings if f["kind"] == "training-logic"]


def test_a_generator_whose_gradients_are_never_cleared_is_found_at_its_step_line(isolated_torch_hooks):
    torch.manual_seed(0)
    netG = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2))
    netD = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
    _measurement, seen, done = measured()
    try:
        optimizerD = torch.optim.SGD(netD.parameters(), lr=1e-3)
        optimizerG = torch.optim.SGD(netG.parameters(), lr=1e-3)
        for _ in range(4):
            netD.zero_grad()
            netD(netG(torch.randn(8, 2)).detach()).mean().backward()
            optimizerD.step()
            netD(netG(torch.randn(8, 2))).mean().neg().backward()  # netG.zero_grad() forgotten
            optimizerG.step()
            step_line = inspect.currentframe().f_lineno - 1
    finally:
        done()
    (finding,) = [e["finding"] for e in seen if e["type"] == "finding" and e["finding"]["kind"] == "training-logic"]
    assert finding["line"] == step_line and finding["details"]["optimizer"] == "optimizerG"
    assert "optimizerG.zero_grad()" in finding["message"] and "optimizerD" in finding["message"]


def test_accumulation_never_cleared_is_found_even_with_clipping_between_backward_and_step(isolated_torch_hooks):
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    _measurement, seen, done = measured()
    try:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for batch in range(12):
            model(torch.randn(8, 4)).pow(2).mean().backward()
            if (batch + 1) % 4 == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)  # writes every gradient in place
                optimizer.step()
                step_line = inspect.currentframe().f_lineno - 1
    finally:
        done()
    (finding,) = [e["finding"] for e in seen if e["type"] == "finding" and e["finding"]["kind"] == "training-logic"]
    assert finding["line"] == step_line and finding["details"]["optimizer"] == "optimizer"
    assert not [e for e in seen if e["type"] == "finding" and e["finding"]["kind"] == "dynamics"]


def test_the_hand_written_update_line_and_the_optimizer_variable_are_read_from_the_source(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "optimizerG: Optimizer = optim.Adam(netG.parameters())\n"
        "def train():\n"
        "    for x in data:\n"
        "        loss = model(x).sum()\n"
        "        loss.backward()\n"
        "        # update by hand\n"
        "        for p in model.parameters():\n"
        "            if p.grad is not None:\n"
        "                p.data.add_(p.grad, alpha=-lr)\n"
        "def evaluate():\n"
        "    model(x).sum().backward()\n"
        "    return saliency\n"
        "loss.backward()\n"
        "w.data = w.data - lr * w.grad.data\n",
        encoding="utf-8",
    )
    path = str(script)
    assert pipeline.assigned_name((path, 1)) == "optimizerG" and pipeline.assigned_name((path, 5)) is None
    assert pipeline.hand_update_at((path, 5)) == (path, 9)  # the write, not the `if p.grad` test above it
    assert pipeline.hand_update_at((path, 11)) is None  # the function ends before any update
    assert pipeline.hand_update_at((path, 13)) == (path, 14)  # a script without functions


def test_adversarial_pairs_need_a_loss_reaching_the_other_optimizers_parameters():
    def series(params, reached, losses=3):
        curves = pipeline.OptimizerCurves(key=id(params), parameters=frozenset(params), reached=set(reached))
        for step in range(losses):
            curves.loss.add(step, 1.0)
        return curves

    discriminator, generator = series({1, 2}, {1, 2}), series({3, 4}, {1, 2, 3, 4})
    assert pipeline.adversarial_pairs([discriminator, generator]) == {0, 1}
    assert pipeline.adversarial_pairs([series({1, 2}, {1, 2}), series({3, 4}, {3, 4})]) == set()
    assert pipeline.adversarial_pairs([discriminator, series({3, 4}, {1, 3}, losses=0)]) == set()


def test_a_hand_written_updates_learning_rate_is_read_from_the_programs_variables():
    import argparse

    def inner_loop(model, lr, epoch):  # the value a loop like ``p.data.add_(p.grad, alpha=-lr)`` applies
        return pipeline._learning_rate_in_frames(sys._getframe())

    def through_args(args):
        return pipeline._learning_rate_in_frames(sys._getframe())

    assert inner_loop(None, 20.0, 3) == 20.0  # ``epoch`` is no learning rate
    assert through_args(argparse.Namespace(batch_size=32, base_lr=0.5)) == 0.5
    assert through_args(argparse.Namespace(batch_size=32, lr=False)) is None
