"""The doctor as the extension runs it for a Spanish editor (TENSORSIGHT_LOCALE=es, set from vscode.env.language):
a real subprocess whose report speaks Spanish, the agent's first-NaN finding and the static rules' findings alike,
while the JSON keys, kinds and severities the extension reads stay as they are."""

from __future__ import annotations

import json
import os
import subprocess

from support.paths import PYHELPERS, PYTHON, example
from tensorsight.core import protocol


def doctor(*args: str, locale: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != protocol.ENV_LOCALE}
    env["PYTHONPATH"] = PYHELPERS
    if locale is not None:
        env[protocol.ENV_LOCALE] = locale
    return subprocess.run(
        [PYTHON, "-m", "tensorsight", "doctor", *args], capture_output=True, text=True, env=env, timeout=240
    )


def test_the_first_nan_finding_is_spanish_when_the_editor_is():
    done = doctor("--json", example("nan_log_zero.py"), locale="es")
    document = json.loads(done.stdout)
    (nonfinite,) = [f for f in document["findings"] if f["kind"] == "nonfinite"]
    assert nonfinite["severity"] == "error" and nonfinite["details"]["op"] == "torch.log"
    assert nonfinite["message"].startswith("Inf nace aquí: torch.log produjo 2 -Inf (de 64 valores)"), nonfinite
    assert "a partir de entradas finitas — forward, paso 5, en nan_log_zero.py:24" in nonfinite["message"]


def test_the_static_findings_and_the_text_report_are_spanish(tmp_path):
    script = tmp_path / "left.py"
    script.write_text("import torch\nbreakpoint()\n")
    done = doctor("--no-run", str(script), locale="es-ES")
    assert done.stdout.startswith("Doctor de TensorSight: 1 hallazgo(s)"), done.stdout
    assert "breakpoint() se quedó en el código" in done.stdout
    english = doctor("--no-run", str(script), locale=None)
    assert english.stdout.startswith("TensorSight doctor: 1 finding(s)")
    assert "breakpoint() is left in the code" in english.stdout
