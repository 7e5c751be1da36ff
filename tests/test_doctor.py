"""The headless doctor as users run it: ``python -m tensorsight doctor`` in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess

from support.paths import PYHELPERS, PYTHON, example


def run_doctor(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": PYHELPERS}
    return subprocess.run(
        [PYTHON, "-m", "tensorsight", "doctor", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def test_json_report_carries_the_shape_map_of_the_first_forward():
    done = run_doctor("--json", example("correct_training.py"))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)  # the script's own prints went to stderr
    assert document["findings"] == []
    rows = {row["path"]: row for row in document["shapeMap"]["rows"]}
    assert rows[""]["type"] == "Sequential"
    assert rows["0"]["type"] == "Linear" and rows["0"]["output_shapes"] == [[64, 64]]
    assert rows["2"]["output_shapes"] == [[64, 2]]


def test_text_report_prints_findings_and_the_shape_table():
    done = run_doctor(example("bug_shapes.py"))
    assert "[shape]" in done.stdout
    assert "Shape map of" in done.stdout and "Total params" in done.stdout


def test_static_only_run_does_not_execute_the_script(tmp_path):
    script = tmp_path / "boom.py"
    script.write_text("import torch\nraise SystemExit('executed')\nbreakpoint()\n")
    done = run_doctor("--json", "--no-run", str(script))
    document = json.loads(done.stdout)
    assert "error" not in document
    assert any(f["line"] == 3 and f["kind"] == "training-logic" for f in document["findings"])


def test_bad_input_gets_a_clear_message_and_status_2(tmp_path):
    missing = run_doctor(str(tmp_path / "nope.py"))
    assert missing.returncode == 2 and "no such script" in missing.stderr
    script = tmp_path / "ok.py"
    script.write_text("print('hi')\n")
    bad_set = run_doctor("--set", "novalue", str(script))
    assert bad_set.returncode == 2 and "KEY=VALUE" in bad_set.stderr


def test_a_script_that_cannot_compile_is_reported_not_crashed(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("import torch\nx = (\n")
    done = run_doctor("--json", str(script))
    document = json.loads(done.stdout)
    assert done.returncode == 1
    assert "SyntaxError" in document["error"] and "was never closed" in document["error"]
