"""The on-request tools as the editor calls them: ``profile --json`` and ``overfit --json`` on real scripts."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

from support.paths import PYHELPERS, PYTHON, REPO, example
from tensorsight.cli.profile import function_label, phase_breakdown, print_report, readable_document, short_path

THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def tensorsight(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **THREADS, "PYTHONPATH": PYHELPERS}
    return subprocess.run(
        [PYTHON, "-m", "tensorsight", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=240
    )


def line_of(path: str, text: str) -> int:
    with open(path, encoding="utf-8") as handle:
        return next(number for number, line in enumerate(handle, start=1) if text in line)


def test_profile_json_has_the_steps_the_functions_and_line_timings(capsys):
    path = example("slow_dataloader.py")
    proc = tensorsight("profile", "--json", "--steps", "6", "--function", "SlowDataset.__getitem__", path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    document = json.loads(proc.stdout)
    assert document["script"] == path and document["steps_profiled"] == 6 and document["warmup"] == 1
    assert document["error"] == "" and document["missing_functions"] == []

    rows = document["rows"]
    assert rows == sorted(rows, key=lambda r: (-r["cumulative_s"], -r["own_s"]))
    getitem = next(r for r in rows if r["function"] == "__getitem__" and r["user"])
    assert (getitem["file"], getitem["line"]) == (path, line_of(path, "def __getitem__"))
    assert getitem["calls"] == 6 * 16  # 6 batches of 16 items, the warm-up batch excluded
    sleep = next(r for r in rows if "time.sleep" in r["function"])
    assert sleep["file"] is None and sleep["own_s"] > 0.5 * getitem["cumulative_s"]
    assert not any(r["file"] and "/tensorsight/" in r["file"] for r in rows)  # our own frames are left out

    (lines,) = document["functions"]
    assert lines["function"] == "SlowDataset.__getitem__" and lines["file"] == path
    slowest = max(lines["lines"], key=lambda line: line["time_s"])
    assert slowest["line"] == line_of(path, "time.sleep(0.001)") and slowest["hits"] == 6 * 16
    assert slowest["percent"] > 80 and "time.sleep" in slowest["source"]

    phases = document["phases"]
    # the phase table is the 6 steps run without the profiler, interleaved with the 6 under it (same data path)
    assert phases["steps"] == 6 and phases["profiler_off"] is True and phases["profiled_steps"] == 6
    assert document["steps_timed"] == 6 and document["slowdown"] > 0
    assert max(phases["seconds"], key=phases["seconds"].get) == "data"

    # reading aids: short locations (the workspace is the working directory), readable built-in names, the breakdown
    assert getitem["location"] == f"examples/slow_dataloader.py:{line_of(path, 'def __getitem__')}"
    assert sleep["label"] == "time.sleep" and sleep["location"] == "(built-in)"
    torch_rows = [r for r in rows if r["file"] and "site-packages" in r["file"]]
    assert torch_rows and all(r["location"].startswith(("torch/", "numpy/")) for r in torch_rows), torch_rows[:3]
    breakdown = {record["phase"]: record for record in phases["breakdown"]}
    assert list(breakdown) == ["data", "forward", "backward", "optimizer", "other"]
    assert breakdown["data"]["ms_per_step"] == round(phases["seconds"]["data"] * 1000 / 6, 3)
    assert abs(sum(record["percent"] for record in breakdown.values()) - 100) < 0.5

    print_report(document)  # the text form reads the same document
    text = capsys.readouterr().out
    assert "Time per phase (mean over 6 steps run without the profiler)" in text
    assert f"{document['slowdown']:.1f}× slower than without" in text
    assert "Line timings of SlowDataset.__getitem__ (examples/slow_dataloader.py:" in text
    header = next(line for line in text.splitlines() if line.lstrip().startswith("Total ms"))
    assert header.split() == ["Total", "ms", "Own", "ms", "Calls", "Function", "Location"]
    getitem_line = next(line for line in text.splitlines() if "*__getitem__" in line)
    assert getitem_line.rstrip().endswith(getitem["location"]) and "site-packages" not in text


def test_short_paths_read_from_the_package_or_the_workspace():
    stdlib = "/usr/lib/python3.11"
    library = "/home/me/.venv/lib/python3.11/site-packages/torch/nn/modules/linear.py"
    assert short_path(library, "/home/me/project", stdlib) == "torch/nn/modules/linear.py"
    assert short_path("/usr/lib/python3/dist-packages/numpy/core.py", "/p", stdlib) == "numpy/core.py"
    assert short_path("/home/me/project/train/loop.py", "/home/me/project", stdlib) == "train/loop.py"
    assert short_path("/usr/lib/python3.11/threading.py", "/home/me/project", stdlib) == "threading.py"
    assert short_path("/elsewhere/tool.py", "/home/me/project", stdlib) == "/elsewhere/tool.py"
    assert short_path(None, "/home/me/project", stdlib) == "(built-in)"


def test_built_in_names_read_as_code_calls_them():
    assert function_label("<built-in method torch._C._nn.linear>") == "torch._C._nn.linear"
    assert function_label("<method 'run_backward' of 'torch._C._EngineBase' objects>") == (
        "torch._C._EngineBase.run_backward"
    )
    assert function_label("<built-in function len>") == "len"
    assert function_label("forward") == "forward" and function_label("<listcomp>") == "<listcomp>"


def test_phase_breakdown_and_the_readable_document_keep_every_raw_key():
    seconds = {"data": 0.3, "forward": 0.1, "backward": 0.1, "optimizer": 0.0, "other": 0.0}
    assert phase_breakdown(seconds, 10)[:2] == [
        {"phase": "data", "ms_per_step": 30.0, "percent": 60.0},
        {"phase": "forward", "ms_per_step": 10.0, "percent": 20.0},
    ]
    raw = {
        "script": "/w/train.py",
        "rows": [dict(function="f", file="/w/train.py", line=3, calls=1, own_s=0.1, cumulative_s=0.2, user=True)],
        "functions": [],
        "phases": {"profiler_off": True, "steps": 10, "seconds": seconds},
        "steps_profiled": 10,
        "wall_s": 1.5,
    }
    readable = readable_document(raw, "/w", "/usr/lib/python3.11")
    (row,) = readable["rows"]
    assert row.items() >= raw["rows"][0].items() and row["location"] == "train.py:3"
    assert readable["phases"].items() >= raw["phases"].items() and len(readable["phases"]["breakdown"]) == 5
    assert "location" not in raw["rows"][0], "the input document is not changed"
    assert (readable["ms_per_step"], readable["profiled_ms_per_step"]) == (50.0, 150.0)


def test_profile_reports_a_function_it_cannot_find(tmp_path):
    path = example("retained_graph.py")
    proc = tensorsight("profile", "--json", "--steps", "3", "--no-phases", "--function", "no_such_function", path)
    document = json.loads(proc.stdout)
    assert document["missing_functions"] == ["no_such_function"] and document["phases"] is None
    assert document["steps_profiled"] == 3 and any("not found: no_such_function" in n for n in document["notes"])


def test_profile_of_a_script_that_does_not_compile_is_a_report_not_a_traceback(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("import torch\nmodel = (\n", encoding="utf-8")
    proc = tensorsight("profile", "--json", str(script))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    document = json.loads(proc.stdout)
    assert "SyntaxError" in document["error"] and "line 2" in document["error"]
    assert document["steps_profiled"] == 0 and document["rows"] == []


def test_overfit_command_finds_the_model_and_loss_module_of_a_script():
    path = example("healthy_training.py")
    proc = tensorsight("overfit", "--json", path)
    document = json.loads(proc.stdout)
    assert proc.returncode == 0, document
    assert document["passed"] is True and document["model"] == "Sequential" and document["loss"] == "CrossEntropyLoss"
    assert (document["model_file"], document["model_line"]) == (path, line_of(path, "loss = criterion(model(x), y)"))
    assert document["final_loss"] < 0.05 * document["initial_loss"] and document["samples"] == 8
    assert 0 < len(document["losses"]) <= 200


def test_overfit_command_uses_a_functional_loss_and_reports_failure_to_learn(tmp_path):
    script = tmp_path / "frozen.py"
    script.write_text(
        textwrap.dedent(
            """
            import torch
            import torch.nn.functional as F

            torch.manual_seed(0)
            model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
            for param in model[0].parameters():
                param.requires_grad_(False)
            model[0].weight.zero_()  # BUG: a dead, frozen first layer: the output ignores the inputs
            optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
            x, y = torch.randn(32, 6), torch.arange(32) % 4
            for step in range(5):
                optimizer.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
            """
        )
    )
    proc = tensorsight("overfit", "--json", "--steps", "150", str(script))
    document = json.loads(proc.stdout)
    assert proc.returncode == 1, document
    assert document["loss"] == "torch.nn.functional.cross_entropy" and document["passed"] is False
    assert "FAILED" in document["message"]
