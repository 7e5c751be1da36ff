"""``agent.measurement.tensorboard_writer``: real event files, read back with TensorBoard's own EventAccumulator."""

from __future__ import annotations

import math
import sys

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tensorsight.agent.measurement.tensorboard_writer import TensorBoardWriter, open_writer
from tensorsight.agent.runtime import events, guard


def read_back(logdir) -> EventAccumulator:
    accumulator = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "histograms": 0})
    accumulator.Reload()
    return accumulator


def test_scalars_are_written_per_tag_and_step(tmp_path):
    writer = TensorBoardWriter(str(tmp_path / "run"))
    writer.scalars(1, {"train/loss": 2.5, "train/lr": 0.1})
    writer.scalars(2, {"train/loss": 1.25, "train/lr": 0.1})
    writer.scalars(3, {"train/loss": math.inf})
    writer.close()
    accumulator = read_back(tmp_path / "run")
    assert set(accumulator.Tags()["scalars"]) == {"train/loss", "train/lr"}
    losses = [(e.step, e.value) for e in accumulator.Scalars("train/loss")]
    assert losses == [(1, 2.5), (2, 1.25), (3, math.inf)]  # non-finite values are written as they are
    assert [e.step for e in accumulator.Scalars("train/lr")] == [1, 2]


def test_histograms_keep_buckets_and_stats(tmp_path):
    writer = TensorBoardWriter(str(tmp_path))
    stats = {"min": -1.0, "max": 1.0, "num": 6.0, "sum": 0.5, "sum_squares": 3.0}
    writer.histogram(10, "weights/fc.weight", [-1.0, 0.0, 1.0], [2.0, 4.0], stats)
    writer.histogram(11, "weights/bad", [0.0, 1.0], [1.0, 2.0], stats)  # edges must be one longer: skipped
    writer.histogram(12, "weights/empty", [0.0], [], stats)
    writer.close()
    accumulator = read_back(tmp_path)
    assert accumulator.Tags()["histograms"] == ["weights/fc.weight"]
    (event,) = accumulator.Histograms("weights/fc.weight")
    value = event.histogram_value
    assert event.step == 10
    assert (value.min, value.max, value.num, value.sum, value.sum_squares) == (-1.0, 1.0, 6.0, 0.5, 3.0)
    assert list(value.bucket_limit) == [0.0, 1.0] and list(value.bucket) == [2.0, 4.0]


def test_every_method_is_safe_after_close(tmp_path):
    writer = TensorBoardWriter(str(tmp_path))
    writer.scalars(1, {"a": 1.0})
    writer.close()
    writer.close()
    writer.scalars(2, {"a": 2.0})
    writer.histogram(2, "h", [0.0, 1.0], [1.0], {})
    writer.flush()
    assert [e.step for e in read_back(tmp_path).Scalars("a")] == [1]


def test_open_writer_announces_the_folder_and_the_command(tmp_path):
    seen: list[dict] = []
    unsubscribe = events.subscribe(seen.append)
    try:
        writer = open_writer(str(tmp_path / "tb"))
    finally:
        unsubscribe()
    assert writer is not None
    writer.close()
    (event,) = [e for e in seen if e["type"] == "tensorboard"]
    assert event["logdir"] == str(tmp_path / "tb")
    assert event["command"] == f"tensorboard --logdir {tmp_path / 'tb'}"


def test_an_unwritable_folder_costs_the_files_never_the_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(guard, "_reported", set())
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert open_writer(str(blocker / "tb")) is None
    assert "cannot write TensorBoard files" in capsys.readouterr().err


def test_without_tensorboard_installed_the_user_is_told_once(monkeypatch, capsys):
    monkeypatch.setattr(guard, "_reported", set())
    monkeypatch.setitem(sys.modules, "tensorboard.summary.writer.event_file_writer", None)
    assert open_writer("unused") is None
    assert open_writer("unused") is None
    err = capsys.readouterr().err
    assert err.count("pip install tensorboard") == 1


@pytest.mark.parametrize("step", [0, 7])
def test_the_step_is_stored_as_given(tmp_path, step):
    writer = TensorBoardWriter(str(tmp_path))
    writer.scalars(step, {"x": 1.0})
    writer.close()
    assert [e.step for e in read_back(tmp_path).Scalars("x")] == [step]
