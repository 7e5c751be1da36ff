"""Measurement of real training scripts: the doctor runs each example as a subprocess (as CI would), and one real
debugpy session checks the same feature arms from the launch options.

Every test here runs real PyTorch training on the CPU; scripts are small (a few seconds each, one thread).
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

import pytest

from support.dap import DebugSession
from support.doctor_report import observed
from support.paths import PYHELPERS, PYTHON, REPO, example

THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}  # a shared 2-core machine: no thread oversubscription


def line_of(path: str, text: str) -> int:
    """1-based number of the first line of ``path`` containing ``text``."""
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if text in line:
                return number
    raise AssertionError(f"{text!r} not in {path}")


def tensorsight(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **THREADS, "PYTHONPATH": PYHELPERS}
    env.pop("TENSORSIGHT_OPTIONS", None)
    return subprocess.run(
        [PYTHON, "-m", "tensorsight", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )


def doctor(script: str, *settings: str, script_args: tuple[str, ...] = ()) -> tuple[dict, subprocess.CompletedProcess]:
    flags = [f"--set={setting}" for setting in settings]
    proc = tensorsight("doctor", "--json", *flags, script, *script_args)
    assert proc.stdout.strip(), proc.stderr[-3000:]
    return json.loads(proc.stdout), proc


def ours(document: dict, kind: str) -> list[dict]:
    """Runtime findings of ``kind`` (the static rules may add their own at the same lines; they carry a rule id)."""
    return [f for f in document["findings"] if f["kind"] == kind and observed(f)]


def dynamics(document: dict) -> list[dict]:
    return [f for f in ours(document, "dynamics") if f["severity"] in ("warning", "error")]


# ------------------------------------------------------------------------------------------------------- phases
def test_slow_dataset_makes_data_loading_dominant_at_the_dataloader_line():
    path = example("slow_dataloader.py")
    document, _ = doctor(path)
    performance = ours(document, "performance")
    assert len(performance) == 1, document
    finding = performance[0]
    assert (finding["file"], finding["line"]) == (path, line_of(path, "loader = DataLoader("))
    assert finding["details"]["shares"]["data"] > 0.5
    assert max(finding["details"]["shares"], key=finding["details"]["shares"].get) == "data"
    assert finding["details"]["num_workers"] == 0
    assert "num_workers=" in finding["message"] and "persistent_workers=True" in finding["message"]
    assert dynamics(document) == []


# ------------------------------------------------------------------------------------------------------- memory
def test_retained_graph_is_flagged_at_the_line_that_keeps_it():
    path = example("retained_graph.py")
    document, _ = doctor(path)
    memory = [f for f in ours(document, "memory") if "autograd graph" in f["message"]]
    assert len(memory) == 1, document
    finding = memory[0]
    assert (finding["file"], finding["line"]) == (path, line_of(path, "total_loss += loss  # BUG"))
    assert finding["details"]["variable"] == "total_loss"
    assert finding["details"]["steps_retained"] >= 3
    assert "loss.item()" in finding["message"]


def test_out_of_memory_becomes_a_memory_error_with_remedies_ranked_by_the_run(tmp_path):
    script = tmp_path / "oom.py"
    script.write_text(
        textwrap.dedent(
            """
            import torch
            from torch import nn

            model = nn.Linear(4, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            total = 0
            for step in range(6):
                optimizer.zero_grad()
                loss = model(torch.ones(8, 4)).pow(2).mean()
                loss.backward()
                optimizer.step()
                total = total + loss
            raise torch.OutOfMemoryError(
                "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.64 GiB of which "
                "1.06 GiB is free. Of the allocated memory 21.90 GiB is allocated by PyTorch, and 180.00 MiB is "
                "reserved by PyTorch but unallocated."
            )
            """
        )
    )
    document, proc = doctor(str(script))
    assert proc.returncode == 1
    errors = [f for f in ours(document, "memory") if f["severity"] == "error"]
    assert len(errors) == 1, document
    finding = errors[0]
    assert finding["line"] == line_of(str(script), "raise torch.OutOfMemoryError")
    assert "tried to allocate 2.0 GiB" in finding["message"]
    remedies = [r["title"] for r in finding["details"]["remedies"]]
    assert "`total`" in remedies[0]  # the retained graph the run showed comes first
    assert any("batch size" in r for r in remedies) and any("autocast" in r for r in remedies)
    assert finding["details"]["steps_completed"] == 6


# ----------------------------------------------------------------------------------------------- curve diagnosis
CURVES = [
    ("curve_lr_too_low.py", "not-decreasing", "optimizer = torch.optim.SGD"),
    ("curve_lr_too_high.py", "diverging", "optimizer = torch.optim.SGD"),
    ("curve_overfitting.py", "overfitting", "val_loss = criterion("),
    ("curve_vanishing_gradients.py", "vanishing-gradients", "loss = criterion(model("),
    ("curve_exploding_gradients.py", "exploding-gradients", "loss.backward()"),
]


@pytest.mark.parametrize(("name", "diagnosis", "line_text"), CURVES, ids=[c[1] for c in CURVES])
def test_each_curve_pathology_is_diagnosed_on_its_example(name, diagnosis, line_text):
    path = example(name)
    document, _ = doctor(path)
    found = [f for f in dynamics(document) if f["details"]["diagnosis"] == diagnosis]
    assert len(found) == 1, document
    assert (found[0]["file"], found[0]["line"]) == (path, line_of(path, line_text))
    assert found[0]["severity"] == "warning"


def test_healthy_run_gets_no_dynamics_and_writes_tensorboard_files_and_the_log(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    path = example("healthy_training.py")
    board, log = tmp_path / "board", tmp_path / "logs" / "train.log"
    document, _ = doctor(path, f"tensorboardDir={board}", f"logFile={log}", "histogramEvery=40")
    assert dynamics(document) == []
    assert ours(document, "performance") == []

    files = os.listdir(board)
    assert len(files) == 1 and files[0].startswith("events.out.tfevents.")
    accumulator = EventAccumulator(str(board), size_guidance={"scalars": 0, "histograms": 0})
    accumulator.Reload()
    tags = accumulator.Tags()
    for tag in ("train/loss", "train/lr", "train/grad_norm", "grad_norm/0.weight", "grad_norm/4.bias", "val/loss"):
        assert tag in tags["scalars"], tags["scalars"]
    for tag in ("time/data_ms", "time/forward_ms", "time/backward_ms", "time/optimizer_ms", "time/other_ms"):
        assert tag in tags["scalars"]
    assert {"weights/0.weight", "grads/0.weight", "weights/4.bias", "grads/4.bias"} <= set(tags["histograms"])
    losses = accumulator.Scalars("train/loss")
    assert [e.step for e in losses] == list(range(1, 241))  # 6 epochs x 40 steps, every step
    assert losses[-1].value < 0.6 * losses[0].value
    assert all(e.value == pytest.approx(1e-3) for e in accumulator.Scalars("train/lr"))
    assert [e.step for e in accumulator.Scalars("val/loss")] == [40, 80, 120, 160, 200, 240]
    histograms = accumulator.Histograms("weights/0.weight")
    assert [h.step for h in histograms] == [1, 40, 80, 120, 160, 200, 240]  # the first step, then every 40
    assert histograms[0].histogram_value.num == 32 * 64 and len(histograms[0].histogram_value.bucket) == 30

    lines = log.read_text(encoding="utf-8").splitlines()
    steps = [line for line in lines if " INFO " in line and " step " in line and " loss " in line]
    assert len(steps) == 240 and len([line for line in lines if "val_loss" in line]) == 6
    first = steps[0].split()
    assert first[0].count("-") == 2 and first[1].count(":") == 2  # "2025-01-31 12:00:00,123 INFO ..."
    assert first[3:5] == ["step", "1"] and first[5] == "loss" and first[7:9] == ["lr", "0.001"]


def test_log_warns_on_a_loss_spike_and_errors_on_nan(tmp_path):
    script = tmp_path / "spike_then_nan.py"
    script.write_text(
        textwrap.dedent(
            """
            import torch
            from torch import nn

            torch.manual_seed(0)
            x, y = torch.randn(64, 4), torch.randn(64, 1)
            model = nn.Linear(4, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
            for step in range(1, 31):
                optimizer.zero_grad()
                loss = nn.functional.mse_loss(model(x), y)
                if step == 15:
                    loss = loss * 50  # a spike
                if step == 25:
                    loss = loss * float("nan")
                loss.backward()
                optimizer.step()
            """
        )
    )
    log = tmp_path / "train.log"
    doctor(str(script), f"logFile={log}", "breakOnNonFinite=false")
    lines = log.read_text(encoding="utf-8").splitlines()
    warnings = [line for line in lines if " WARNING " in line]
    errors = [line for line in lines if " ERROR " in line]
    assert len(warnings) == 1 and " step 15 " in warnings[0] and "loss spike" in warnings[0]
    assert errors and " step 25 " in errors[0] and "NaN/Inf" in errors[0]
    assert len([line for line in lines if " INFO " in line]) == 23


def test_measurement_never_changes_what_the_program_computes(tmp_path):
    script = tmp_path / "digest.py"
    script.write_text(
        textwrap.dedent(
            """
            import hashlib, sys
            import torch
            from torch import nn
            from torch.utils.data import DataLoader, TensorDataset

            torch.manual_seed(0)
            data = TensorDataset(torch.randn(96, 8), torch.randint(0, 3, (96,)))
            loader = DataLoader(data, batch_size=16, shuffle=True)
            model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3))
            optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
            for epoch in range(2):
                model.train()
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = nn.functional.cross_entropy(model(x), y)
                    loss.backward()
                    optimizer.step()
                model.eval()
                with torch.no_grad():
                    nn.CrossEntropyLoss()(model(data.tensors[0]), data.tensors[1])
            digest = hashlib.sha256()
            for tensor in model.state_dict().values():
                digest.update(tensor.numpy().tobytes())
            digest.update(torch.rand(4).numpy().tobytes())
            for p in model.parameters():
                digest.update(p.grad.numpy().tobytes())
                digest.update(str(p._version).encode())
            open(sys.argv[1], "w").write(digest.hexdigest())
            """
        )
    )
    plain, measured = tmp_path / "plain.txt", tmp_path / "measured.txt"
    doctor(str(script), "measure=false", script_args=(str(plain),))
    doctor(str(script), "histogramEvery=1", "scalarsEvery=1", script_args=(str(measured),))
    assert plain.read_text() and plain.read_text() == measured.read_text()


# --------------------------------------------------------------------------------------------------- real debugger
def test_measurement_arms_from_launch_options_in_a_real_debugpy_session(tmp_path):
    path = example("retained_graph.py")
    log = tmp_path / "train.log"
    with DebugSession.launch(path, options={"measure": True, "logFile": str(log)}, env=THREADS) as session:
        session.wait_for_exit(timeout=120)
    lines = log.read_text(encoding="utf-8").splitlines()
    assert [line.split()[3:5] for line in lines if " INFO " in line][:3] == [
        ["step", "1"],
        ["step", "2"],
        ["step", "3"],
    ]
    assert len([line for line in lines if " step " in line]) == 30


# ------------------------------------------------------------------------------------------------------------ CUDA
CUDA_PROGRAM = """
import json, sys
from tensorsight.agent.runtime import events, install, options
from tensorsight.agent.runtime.excepthook import explain

options.set_options({"measure": True})
seen = []
events.subscribe(seen.append)
install.install("doctor")
import torch
from torch import nn

model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 10)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
labels = torch.zeros(512, dtype=torch.long, device="cuda")
for step in range(8):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(torch.randn(512, 256, device="cuda")), labels)
    loss.backward()
    optimizer.step()
try:
    torch.empty(1 << 50, dtype=torch.uint8, device="cuda")  # far more than any GPU: a real out-of-memory error
except torch.OutOfMemoryError as exc:
    oom = [f.to_dict() for f in explain(exc)]
print(json.dumps({"events": [e for e in seen if e["type"] in ("memory", "phases")], "oom": oom}))
"""


@pytest.mark.cuda
def test_on_a_gpu_memory_figures_phases_and_oom_advice_come_from_the_device(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    script = tmp_path / "cuda_run.py"
    script.write_text(CUDA_PROGRAM)
    env = {**os.environ, **THREADS, "PYTHONPATH": PYHELPERS}
    proc = subprocess.run([PYTHON, str(script)], env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    document = json.loads(proc.stdout.strip().splitlines()[-1])
    memory = [e for e in document["events"] if e["type"] == "memory"]
    assert len(memory) == 8
    assert all(e["cuda_allocated"] > 0 and e["cuda_reserved"] >= e["cuda_allocated"] for e in memory)
    assert all(e["cuda_peak"] >= e["cuda_allocated"] for e in memory)
    nvml = next(e for e in memory if "nvml_used" in e)  # NVML is read at most once a second
    assert 0 < nvml["nvml_used"] <= nvml["nvml_total"] and nvml["nvml_used"] >= nvml["cuda_reserved"]
    phases = [e for e in document["events"] if e["type"] == "phases"]
    assert len(phases) == 8 and all(sum(e["seconds"].values()) > 0 for e in phases)
    (oom,) = document["oom"]
    assert oom["kind"] == "memory" and oom["severity"] == "error" and oom["file"] == str(script)
    assert "requested" in oom["details"]["figures"] and oom["details"]["steps_completed"] == 8
