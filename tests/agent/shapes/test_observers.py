"""``agent.shapes.observers`` in process: file kinds, one observation window on lines of this test, its step rules.

Each test gets a fresh observer state; a window is always closed again (its TorchFunctionMode taken out; the global
module hooks, which stay registered between windows, are removed by the fixture), and the evaluation watch that closing
a window would leave behind is not armed. End-to-end behaviour
(sampling over a real training script, a debug session) is tests/agent/shapes/test_observers_dap.py.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import warnings

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn.modules import module as torch_module
from torch.overrides import _get_current_function_mode_stack

from tensorsight.agent.runtime import events, excepthook, guard, options, steps
from tensorsight.agent.shapes import broadcasts, line_shapes, observers, shape_errors, transfers, window_state

HERE = os.path.abspath(__file__)


@pytest.fixture
def state(monkeypatch):
    fresh = window_state.WindowState()
    fresh.torch = torch
    fresh.eval_seen = True  # no evaluation watch left registered when a window closes
    monkeypatch.setattr(window_state, "state", fresh)
    monkeypatch.setattr(steps, "_step", 0)
    monkeypatch.setattr(guard, "_reported", set())
    yield fresh
    for handle in fresh.handles:  # registered at the first window, kept between windows
        handle.remove()


@pytest.fixture
def published():
    seen: list[dict] = []
    unsubscribe = events.subscribe(seen.append)
    yield seen
    unsubscribe()


@pytest.fixture
def window(state):
    hooks_before = (len(torch_module._global_forward_pre_hooks), len(torch_module._global_forward_hooks))
    observers._open_window()
    yield state
    observers._close_window()
    assert not state.window
    assert _get_current_function_mode_stack() == []
    # the hooks stay between windows (Dynamo guards on how many global hooks there are): two, registered once
    observers._open_window()
    observers._close_window()
    assert len(state.handles) == 2
    hooks_now = (len(torch_module._global_forward_pre_hooks), len(torch_module._global_forward_hooks))
    assert hooks_now == (hooks_before[0] + 1, hooks_before[1] + 1)


def shapes_at(seen, line):
    return [e for e in seen if e["type"] == "shape" and e["file"] == HERE and e["line"] == line]


def test_file_kinds(state):
    assert window_state.file_kind(HERE) == window_state.USER
    assert window_state.file_kind(observers.__file__) == window_state.OURS
    assert window_state.file_kind(os.path.join(os.sep, "env", "debugpy", "server", "api.py")) == window_state.OURS
    assert (
        window_state.file_kind(sys.modules[torch.optim.SGD.__module__].__file__) == window_state.SKIP
    )  # optimizer internals
    assert window_state.file_kind(nn.init.__file__) == window_state.SKIP
    assert window_state.file_kind(nn.Linear.forward.__code__.co_filename) == window_state.LIB
    assert state.file_kinds[HERE] == window_state.USER  # decided once per file


def test_a_window_attributes_each_value_to_its_line_and_name(window, published):
    line = sys._getframe().f_lineno + 1
    features = torch.ones(4, 3)
    scaled = features * 2  # noqa: F841 - observed
    line_shapes.flush_lines()
    (first,) = shapes_at(published, line)
    assert (first["name"], first["text"], first["shape"], first["dtype"], first["device"]) == (
        "features",
        "f32[4, 3]",
        [4, 3],
        "float32",
        "cpu",
    )
    (second,) = shapes_at(published, line + 1)
    assert second["name"] == "scaled" and second["text"] == "f32[4, 3]"
    line_shapes.flush_lines()
    assert len(shapes_at(published, line)) == 1  # unchanged shapes are published once


def test_a_module_call_and_the_first_forward_shape_map(window, published):
    model = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2))
    line = sys._getframe().f_lineno + 1
    out = model(torch.ones(7, 3))  # noqa: F841 - observed
    line_shapes.flush_lines()
    assert [e["text"] for e in shapes_at(published, line) if e.get("name") == "out"] == ["f32[7, 2]"]
    (shape_map,) = [e for e in published if e["type"] == "shape-map"]
    assert shape_map["model"] == "Sequential" and (shape_map["file"], shape_map["line"]) == (HERE, line)
    rows = {r["path"]: r for r in shape_map["rows"]}
    assert rows["0"]["output_shapes"] == [[7, 5]] and rows["2"]["output_shapes"] == [[7, 2]]
    model(torch.ones(7, 3))
    assert len([e for e in published if e["type"] == "shape-map"]) == 1  # the first forward only


def test_silent_broadcasting_of_a_prediction_is_a_finding_at_the_line_once(window, published):
    model = nn.Linear(3, 1)
    prediction, target = model(torch.ones(6, 3)), torch.ones(6)
    line = sys._getframe().f_lineno + 2
    for _ in range(2):
        error = torch.sigmoid(prediction) - target  # noqa: F841 - [6, 1] - [6] -> [6, 6]
    findings = [e["finding"] for e in published if e["type"] == "finding"]
    (finding,) = findings
    assert (finding["kind"], finding["severity"], finding["file"], finding["line"]) == ("shape", "warning", HERE, line)
    assert finding["details"]["shapes"] == [[6, 1], [6]] and finding["details"]["result"] == [6, 6]
    assert finding["message"].startswith("silent broadcasting in sub:")


def hand_written_bce(logits, targets):
    return -(targets * nn.functional.logsigmoid(logits) + (1 - targets) * nn.functional.logsigmoid(-logits)).mean()


def squared_error(prediction, target):
    return ((prediction - target.view(-1, 1)) ** 2).mean()  # the mismatch is made here, not by the caller


def test_a_broadcast_between_what_a_function_received_is_a_finding_at_the_call_that_passed_it(window, published):
    model = nn.Linear(3, 1)
    logits, labels = model(torch.ones(6, 3)).squeeze(-1), torch.ones(6)
    line = sys._getframe().f_lineno + 1
    loss = hand_written_bce(logits, labels.view(-1, 1))  # noqa: F841 - [6, 1] against [6] -> [6, 6]
    made_inside = squared_error(logits, labels)  # noqa: F841 - [6] against [6, 1], made in the function
    found = [e["finding"] for e in published if e["type"] == "finding"]
    assert [(f["file"], f["details"]["shapes"]) for f in found] == [(HERE, [[6, 1], [6]]), (HERE, [[6], [6, 1]])]
    passed, inside = found
    assert passed["line"] == line and passed["details"]["inside"]["function"] == "hand_written_bce"
    assert "in mul inside hand_written_bce() at line" in passed["message"]
    assert inside["line"] == squared_error.__code__.co_firstlineno + 1 and "inside" not in inside["details"]


def test_a_reduction_that_dropped_a_dim_is_a_finding_wherever_it_is_broadcast_back(window, published):
    counts = torch.ones(5, 5)
    line = sys._getframe().f_lineno + 1
    normalised = counts / counts.sum(1)  # noqa: F841 - the row sums divide the columns
    kept = counts / counts.sum(1, keepdim=True)  # noqa: F841 - intended
    centred = counts - counts.mean(0)  # noqa: F841 - column means: intended
    (finding,) = [e["finding"] for e in published if e["type"] == "finding"]
    assert (finding["line"], finding["details"]["op"]) == (line, "div")
    assert "sum of a [5, 5] tensor over dim 1 without keepdim" in finding["message"]


def test_a_long_window_keeps_recognising_predictions(window, published, monkeypatch):
    monkeypatch.setattr(broadcasts, "MAX_PROVENANCE", 16)
    model = nn.Linear(3, 1)
    kept = [torch.ones(4, 3).sum(1) for _ in range(40)]  # live reductions fill the table, more than it holds
    prediction = model(torch.ones(6, 3))
    error = prediction - torch.ones(6)  # noqa: F841 - still seen as a prediction against a target
    assert len(window.origins) <= 16 and kept
    (finding,) = [e["finding"] for e in published if e["type"] == "finding"]
    assert finding["details"]["shapes"] == [[6, 1], [6]]


def test_intended_broadcasts_are_not_findings(window, published):
    position = torch.arange(5000).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, 16, 2) * -0.5)
    table = position * div_term  # noqa: F841 - [5000, 1] x [8]: the positional-encoding table
    x = nn.Linear(4, 16)(torch.ones(2, 7, 4))
    scores = torch.ones(2, 7, 7)
    mask = torch.tril(torch.ones(7, 7))
    masked = scores.masked_fill(mask == 0, float("-inf")) / 4.0  # noqa: F841
    encoded = x + torch.zeros(1, 5000, 16)[:, : x.size(1)]  # noqa: F841
    weights = torch.ones(2, 7)
    weighted = x * weights[:, :, None]  # noqa: F841
    normalised = (x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True)  # noqa: F841
    biased = torch.ones(3, 16) + torch.ones(16)  # noqa: F841
    assert [e for e in published if e["type"] == "finding"] == []


def test_a_loss_with_broadcasting_targets_is_a_finding(window, published):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch's own size warning, checked below
        loss = nn.functional.mse_loss(torch.ones(5, 1), torch.ones(5))  # noqa: F841
    (finding,) = [e["finding"] for e in published if e["type"] == "finding"]
    assert finding["details"]["op"] == "mse_loss" and finding["details"]["result"] == [5, 5]


class Readings(torch.utils.data.Dataset):
    """Hourly readings; ``squeeze`` flattens each one-step target window to a scalar (the bug) or keeps it."""

    def __init__(self, series: torch.Tensor, squeeze: bool) -> None:
        self.series, self.squeeze = series, squeeze

    def __len__(self) -> int:
        return len(self.series) - 4

    def __getitem__(self, i: int):
        window = self.series[i : i + 4]
        target = self.series[i + 4 : i + 5].squeeze() if self.squeeze else self.series[i + 4 : i + 5]
        return window, target


def fit_readings(squeeze: bool) -> int:
    """One epoch over ``Readings``; returns the loss line."""
    model = nn.Linear(4, 1)
    loader = torch.utils.data.DataLoader(Readings(torch.arange(40.0) / 40, squeeze), batch_size=8)
    for window, target in loader:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # torch's own size warning
            loss = nn.functional.mse_loss(model(window), target)
        loss.backward()
    return sys._getframe().f_lineno - 2


def test_a_loss_target_the_dataset_reshaped_is_a_finding_where_getitem_reshapes_it(window, published):
    loss_line = fit_readings(squeeze=True)
    (finding,) = [e["finding"] for e in published if e["type"] == "finding"]
    target_line = Readings.__getitem__.__code__.co_firstlineno + 2
    assert (finding["file"], finding["line"]) == (HERE, target_line)
    assert finding["details"]["result"] == [8, 8] and finding["details"]["loss_line"] == loss_line
    assert f"the loss is at test_observers.py:{loss_line}" in finding["message"]
    fit_readings(squeeze=False)  # [8, 1] against [8, 1]: nothing
    assert len([e for e in published if e["type"] == "finding"]) == 1


def test_the_same_tensor_moved_in_two_steps_is_a_device_finding(window, published, monkeypatch):
    batch = torch.ones(8, 2)
    line = sys._getframe().f_lineno + 3
    for step in (1, 2):
        monkeypatch.setattr(steps, "_step", step)
        moved = batch.to("cpu")  # noqa: F841 - a transfer that belongs before the loop
    transfers.report_transfers()
    transfers.report_transfers()
    (finding,) = [e["finding"] for e in published if e["type"] == "finding"]
    assert (finding["kind"], finding["file"], finding["line"]) == ("device", HERE, line)


def test_a_fresh_tensor_over_the_same_numpy_array_moved_twice_is_a_device_finding(window, published, monkeypatch):
    weights = np.linspace(1.0, 2.0, 8, dtype=np.float32)  # a constant array, converted again at each step
    buffer = np.zeros((4, 2), dtype=np.float32)  # a buffer refilled with each batch: new data at each step
    line = sys._getframe().f_lineno + 5
    for step in (1, 2):
        monkeypatch.setattr(steps, "_step", step)
        buffer[:] = step
        batch = torch.from_numpy(buffer).to("cpu")  # noqa: F841 - a new batch each step, as it must be
        moved = torch.from_numpy(weights).to("cpu")  # noqa: F841 - belongs before the loop
    transfers.report_transfers()
    (finding,) = [e["finding"] for e in published if e["type"] == "finding"]
    assert (finding["kind"], finding["file"], finding["line"]) == ("device", HERE, line)


def test_transfers_inside_a_library_or_of_one_number_are_not_the_users(window, published, monkeypatch, tmp_path):
    folder = tmp_path / "site-packages"  # where installed libraries live: not the user's code
    folder.mkdir()
    (folder / "steplogger.py").write_text("def log(value, state):\n    return state.to(value.device), value.cpu()\n")
    spec = importlib.util.spec_from_file_location("steplogger", folder / "steplogger.py")
    steplogger = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(steplogger)
    state, counter, batch = torch.ones(16), torch.tensor(3.0), torch.ones(8, 2)
    line = sys._getframe().f_lineno + 6
    for step in (1, 2):
        monkeypatch.setattr(steps, "_step", step)
        steplogger.log(batch, state)  # the library moves its own state at every call
        counter.to("cpu")  # one number
        count = counter.cpu()  # noqa: F841
        moved = batch.to("cpu")  # noqa: F841 - the user's own repeated transfer
    transfers.report_transfers()
    (finding,) = [e["finding"] for e in published if e["type"] == "finding"]
    assert (finding["kind"], finding["line"], finding["details"]["tensors"]) == ("device", line, 1)


def test_a_module_fed_from_another_device_is_an_error_finding(window, published):
    model = nn.Linear(2, 2, device="meta")
    line = sys._getframe().f_lineno + 2
    with pytest.raises(RuntimeError):  # torch's own error; the hook saw the inputs before it
        model(torch.ones(3, 2))
    (finding,) = [e["finding"] for e in published if e["type"] == "finding"]
    assert (finding["kind"], finding["severity"], finding["line"]) == ("device", "error", line)
    assert finding["details"] == {"module": "Linear", "input_device": "cpu", "module_device": "meta"}


def test_observing_is_a_good_guest(window):
    torch.manual_seed(0)
    rng = torch.get_rng_state()
    weight = torch.ones(3, requires_grad=True)
    data = torch.arange(3.0)
    scaled = weight * data
    assert torch.equal(torch.get_rng_state(), rng)
    assert (weight._version, data._version) == (0, 0)
    assert type(scaled.grad_fn).__name__ == "MulBackward0" and scaled.grad_fn.next_functions[1][0] is None
    assert torch.equal(scaled, torch.tensor([0.0, 1.0, 2.0]))


def mse_warning_location() -> tuple[str, int]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.functional.mse_loss(torch.ones(5, 1), torch.ones(5))
    (warning,) = caught
    return warning.filename, warning.lineno


def test_a_window_leaves_torchs_warning_locations_at_the_users_line(state):
    unobserved = mse_warning_location()
    assert unobserved[0] == HERE
    observers._open_window()
    try:
        observed = mse_warning_location()
    finally:
        observers._close_window()
    assert observed == unobserved


def test_the_first_window_closes_at_the_third_step_and_reopens_every_n(state):
    state.every = 10
    observers._open_window()
    try:
        observers._on_step(1, None)
        observers._on_step(2, None)
        assert state.window
        observers._on_step(observers.FIRST_STEPS, None)
        assert not state.window and not state.initial
        observers._on_step(9, None)
        assert not state.window
        observers._on_step(10, None)
        assert state.window  # a one-step window
        observers._on_step(11, None)
        assert not state.window
    finally:
        observers._close_window()
    assert _get_current_function_mode_stack() == []


def test_run_finished_closes_the_window_and_flushes(state, published):
    observers._open_window()
    try:
        line = sys._getframe().f_lineno + 1
        total = torch.zeros(2)  # noqa: F841
        observers._on_event({"type": "run-finished"})
        assert not state.window
    finally:
        observers._close_window()
    assert [e["text"] for e in shapes_at(published, line)] == ["f32[2]"]


def test_with_observe_shapes_off_only_the_error_explainer_is_armed(monkeypatch, state):
    monkeypatch.setattr(options, "_cache", {"observeShapes": False})
    monkeypatch.setattr(excepthook, "_explainers", [])
    monkeypatch.setattr(steps, "_listeners", [])
    observers.arm("doctor")
    assert excepthook._explainers == [shape_errors.explain]
    assert steps._listeners == []


def test_a_wrong_sampling_interval_keeps_the_default_and_says_so(monkeypatch, state, capsys):
    monkeypatch.setattr(options, "_cache", {"observeShapesEvery": 0})
    monkeypatch.setattr(excepthook, "_explainers", [])
    monkeypatch.setattr(steps, "_listeners", [])
    monkeypatch.setattr(steps, "_armed", True)  # no torch hook from this test
    monkeypatch.setattr(events, "_listeners", [])
    monkeypatch.setattr(observers, "when_imported", lambda name, callback: None)
    observers.arm("doctor")
    assert state.every == observers.DEFAULT_EVERY
    assert "observeShapesEvery must be a positive integer" in capsys.readouterr().err
    assert steps._listeners == [observers._on_step]
    assert [listener for listener, _types in events._listeners] == [observers._on_event]
