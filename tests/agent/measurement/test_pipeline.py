"""``agent.measurement.pipeline``: the launch options it reads, and the per-step pipeline on a real training loop.

The pipeline runs in this process on a tiny model: its global hooks and wrappers are taken out again by
``Measurement.stop``; the shared step counter's torch hook goes into a swapped-in hook dict and fresh counter state,
so nothing of it survives the test (the same isolation as tests/agent/runtime/test_steps.py).
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import os

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
    assert {e["step"] for e in histograms} == {2}  # histogramEvery=2
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
