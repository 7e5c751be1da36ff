"""The lesson's toolbox (tensorsight.agent.toolbox), in-process: each tool's result, printout, and read-only
behaviour."""

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

import tensorsight
from tensorsight.agent import toolbox


def test_public_names_and_spanish_aliases():
    assert tensorsight.check_data_leakage is toolbox.check_data_leakage
    assert tensorsight.fuga_de_datos is toolbox.check_data_leakage
    assert tensorsight.valores_invalidos is toolbox.invalid_values
    for name in ("debug_print", "check_shapes", "detect_nan", "check_devices", "invalid_values"):
        assert getattr(tensorsight, name) is getattr(toolbox, name)


def test_debug_print_names_values_from_the_call(capsys):
    activations = torch.randn(8, 4)
    text = toolbox.debug_print(activations)
    out = capsys.readouterr().out
    assert out.strip() == text
    assert "test_toolbox.py:" in text and "activations: f32[8, 4] cpu" in text
    logits = torch.tensor([1.0, float("nan")])
    text = toolbox.debug_print("logits", logits)
    assert "logits: f32[2] cpu" in text and "NaN" in text
    text = toolbox.debug_print(batch={"x": torch.zeros(2, 3), "y": torch.ones(2)})
    assert "batch: dict of 2" in text and "batch['x']: f32[2, 3]" in text and "batch['y']: f32[2]" in text


class WithNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.norm = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.5)
        self.head = nn.Linear(4 * 6 * 6, 5)
        self.unused = nn.Linear(2, 2)

    def forward(self, x):
        x = self.drop(torch.relu(self.norm(self.conv(x))))
        return self.head(x.flatten(1))


def test_check_shapes_rows_table_and_read_only(capsys):
    model = WithNorm()
    model.train()
    model.head.eval()
    running = model.norm.running_mean.clone()
    batch = torch.randn(2, 3, 8, 8)
    rng_state = torch.random.get_rng_state()
    rows = toolbox.check_shapes(model, batch)
    table = capsys.readouterr().out
    by_path = {row.path: row for row in rows}
    assert by_path[""].output_shapes == [[2, 5]] and by_path[""].type == "WithNorm"
    assert by_path["conv"].input_shapes == [[2, 3, 8, 8]] and by_path["conv"].output_shapes == [[2, 4, 6, 6]]
    assert by_path["conv"].params == 4 * 3 * 3 * 3 + 4
    assert by_path["conv"].memory_bytes == 2 * 4 * 6 * 6 * 4 + (4 * 3 * 3 * 3 + 4) * 4
    assert by_path["head"].dtype == "float32" and by_path["head"].depth == 1
    assert by_path["unused"].calls == 0 and by_path["unused"].output_shapes == []
    assert by_path[""].params == sum(p.numel() for p in model.parameters())
    assert "Shape map of WithNorm" in table and "f32[2, 4, 6, 6]" in table and str(rows) == table.strip()
    # read-only: BatchNorm statistics, the global RNG and each module's train/eval flag are as before
    assert torch.equal(model.norm.running_mean, running)
    assert torch.equal(torch.random.get_rng_state(), rng_state)
    assert model.training and model.norm.training and not model.head.training
    assert rows[0].to_dict()["output_shapes"] == [[2, 5]]


def test_check_shapes_explains_a_failing_forward():
    model = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(30, 2))
    rows = toolbox.check_shapes(model, torch.randn(4, 10), print_table=False)
    assert rows.error is not None
    assert "Sequential.2" in rows.error and "expects 30 input features but receives 20" in rows.error
    by_path = {row.path: row for row in rows}
    assert by_path["0"].output_shapes == [[4, 20]] and by_path["2"].output_shapes == []
    assert rows.finding is not None and rows.finding.kind == "shape"  # the user line is this test's call
    with pytest.raises(TypeError, match=r"torch\.nn\.Module"):
        toolbox.check_shapes("not a model", torch.zeros(1))


def test_invalid_values_and_detect_nan(capsys):
    x = torch.tensor([[1.0, float("nan")], [float("inf"), -float("inf")]])
    before = x.clone()
    counts = toolbox.invalid_values(x, "x")
    assert counts == {"x": {"nan": 1, "posinf": 1, "neginf": 1, "total": 3, "elements": 4, "fraction": 0.75}}
    assert torch.equal(torch.isnan(x), torch.isnan(before))
    assert "x: NaN×1 +Inf×1 -Inf×1 (3 of 4 elements, 75.00%)" in capsys.readouterr().out
    arr = np.array([1.0, np.nan, 2.0])
    assert toolbox.valores_invalidos(arr, quiet=True)["arr"]["nan"] == 1  # named from the call's source
    assert toolbox.detect_nan(torch.ones(3)) is False
    assert toolbox.detect_nan(x) is True
    meta = toolbox.invalid_values(torch.empty(3, device="meta"), "m", quiet=True)
    assert meta["m"]["total"] is None
    with pytest.raises(TypeError, match="tensor, an ndarray, a module"):
        toolbox.invalid_values("text")


def test_detect_nan_looks_at_weights_and_gradients(capsys):
    model = nn.Linear(3, 1)
    model(torch.tensor([[1.0, float("nan"), 0.0]])).sum().backward()
    assert toolbox.detect_nan(model) is True
    out = capsys.readouterr().out
    assert "model.weight.grad: NaN×" in out and "model.weight:" not in out.replace("model.weight.grad", "")
    counts = toolbox.invalid_values([torch.zeros(2), {"b": torch.tensor([float("inf")])}], "batch", quiet=True)
    assert counts["batch[1]['b']"]["posinf"] == 1 and counts["batch[0]"]["total"] == 0


def test_check_data_leakage_arrays_pairs_and_options(capsys):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 4)).astype(np.float32)
    y = rng.integers(0, 2, 500)
    X[:, 3] = y
    X_train, y_train, X_test, y_test = X[:400], y[:400], X[380:], y[380:]
    report = toolbox.check_data_leakage((X_train, y_train), (X_test, y_test), ids=(np.arange(400), np.arange(380, 500)))
    checks = {i.check: i for i in report.issues}
    assert set(checks) == {"id-overlap", "duplicates", "label-copy"}
    assert checks["duplicates"].count == 20 and checks["id-overlap"].count == 20
    assert "3 problem(s)" in capsys.readouterr().out
    assert bool(report) is True
    clean = toolbox.fuga_de_datos(torch.randn(50, 3), torch.randn(20, 3), torch.randn(10, 3), quiet=True)
    assert not clean and set(clean.rows) == {"train", "test", "val"}
    with pytest.raises(TypeError, match="could not read samples"):
        toolbox.check_data_leakage(object(), object())


def test_check_data_leakage_dataframes_with_named_columns():
    frame = pd.DataFrame({"key": np.arange(100) % 70, "v": np.arange(100) * 0.5, "when": np.arange(100), "y": 1})
    report = toolbox.check_data_leakage(
        frame.iloc[:60], frame.iloc[60:], id_column="key", time_column="when", label="y", quiet=True
    )
    checks = {i.check: i for i in report.issues}
    assert set(checks) == {"id-overlap"}
    assert checks["id-overlap"].count == 30


def test_check_devices(capsys):
    model = nn.Linear(4, 2)
    xb, yb = torch.randn(3, 4), torch.randn(3)
    assert toolbox.check_devices(model, xb, yb) == []
    assert "ok: model and 2 tensor(s) all on cpu" in capsys.readouterr().out
    stray = torch.empty(3, 4, device="meta")
    issues = toolbox.check_devices(model, xb, (stray, yb))
    assert [(i.subject, i.device, i.expected) for i in issues] == [("(stray, yb)[0]", "meta", "cpu")]
    half_moved = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2, device="meta"))
    issues = toolbox.check_devices(half_moved, quiet=True)
    assert {i.severity for i in issues} == {"error", "warning"}
    with pytest.raises(TypeError, match=r"torch\.nn\.Module first"):
        toolbox.check_devices(xb, model)
    with pytest.raises(TypeError, match="not a tensor"):
        toolbox.check_devices(model, "text")


def test_measurement_tools_are_reachable_from_the_toolbox():
    from tensorsight.agent.measurement import timer

    assert toolbox.Timer is timer.Timer
    with pytest.raises(AttributeError):
        _ = toolbox.no_such_tool
