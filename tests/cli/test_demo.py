"""``python -m tensorsight demo`` runs every toolbox tool on synthetic data and prints what each one found."""

import os
import subprocess

import pytest

from support.paths import PYHELPERS, PYTHON, REPO


@pytest.mark.timing  # bounds a wall time: scripts/test.sh runs it with nothing beside it
def test_demo_runs_every_tool_and_reports_each_result():
    proc = subprocess.run(
        [PYTHON, "-m", "tensorsight", "demo", "--rows", "200000"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": PYHELPERS},
        cwd=REPO,
        timeout=240,
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    summary = out.split("=== summary", 1)[1]
    verdicts = dict(line.strip().split("  ", 1) for line in summary.splitlines()[1:] if line.startswith("  "))
    verdicts = {key.strip(): value.strip() for key, value in verdicts.items()}
    assert verdicts["debug_print"] == "printed 2 summaries (logits carries 1 NaN)"
    assert verdicts["check_shapes"] == "mapped 11 modules, output [8, 10], 26,698 parameters"
    assert verdicts["check_shapes on a broken model"].startswith("explained: shape error in Sequential.7")
    assert verdicts["silent broadcasting"] == "[64, 1] vs [64] broadcasts to [64, 64]"
    assert (
        "batch has NaN/Inf=True (1 NaN, 1 +Inf, 1 -Inf)" in verdicts["detect_nan / invalid_values (valores_invalidos)"]
    )
    assert verdicts["check_data_leakage"] == "found duplicates (40), label-copy (1500)"
    assert verdicts["fuga_de_datos on DataFrames"] == "found id-overlap (65), temporal (150)"
    assert verdicts["check_data_leakage at scale"].startswith("200,000 + 40,000 rows checked in")
    assert verdicts["check_devices"] == "0 issue(s) with all on cpu; 1 with a meta tensor mixed in"
    assert not any(v.startswith("FAILED") for v in verdicts.values())
    assert "Total params: 26,698" in out and "[check_devices] error: stray is on meta" in out
    seconds = float(out.rsplit("demo finished in ", 1)[1].split(" s")[0])
    assert seconds < 60
