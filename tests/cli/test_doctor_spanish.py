"""The doctor as the extension runs it for a Spanish editor (TENSORSIGHT_LOCALE=es, set from vscode.env.language):
a real subprocess whose report speaks Spanish, the agent's first-NaN finding and the static rules' findings alike,
while the JSON keys, kinds and severities the extension reads stay as they are."""

from __future__ import annotations

import json
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from support.paths import PYHELPERS, PYTHON, example, program
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
    assert nonfinite["message"].endswith("a partir de entradas finitas — propagación"), nonfinite
    assert (nonfinite["step"], nonfinite["line"]) == (5, 24)  # fields, shown once by whoever shows the finding


def test_the_static_findings_and_the_text_report_are_spanish(tmp_path):
    script = tmp_path / "left.py"
    script.write_text("import torch\nbreakpoint()\n")
    done = doctor("--no-run", str(script), locale="es-ES")
    assert done.stdout.startswith("Doctor de TensorSight: 1 hallazgo(s)"), done.stdout
    assert "breakpoint() se quedó en el código" in done.stdout
    english = doctor("--no-run", str(script), locale=None)
    assert english.stdout.startswith("TensorSight doctor: 1 finding(s)")
    assert "breakpoint() is left in the code" in english.stdout


# Words that are English and never Spanish: one of them in a Spanish report is an untranslated clause. Code in a
# message (a quoted line with its comment, `torch.log`, loss.backward(), print(), max_norm=1.0, nan_log_zero.py:24)
# is left out first; a placeholder in backticks (`(not replayed)`) is not code.
ENGLISH_WORDS = frozenset(
    "the was were not of from with and its is are made could which step steps this that it at by has have been in on "
    "or to for an checked replayed seen caller line reads uses calls assigns sets outside data".split()
)
CODE = re.compile(r"`[^`(][^`]*`|\S*[._=\[\]{}/:<>]\S*|\w+\(\S*")
PHASE_IN_SPANISH = {"carga de datos", "propagación", "retropropagación", "optimizador", "otros"}
# the NaN programs (each way a first NaN is born or comes in, and a forward the sentinel may not replay) and programs
# with each other kind of finding (training logic, memory, performance, leakage, device, the loss curves')
SPANISH_PROGRAMS = [
    example("nan_log_zero.py"),
    example("nan_from_data.py"),
    example("nan_sqrt_backward.py"),
    example("nan_overflow_inf.py"),
    example("nan_lr_too_high.py"),
    program("guest_uncontained.py"),
    example("retained_graph.py"),
    example("bug_shapes.py"),
    example("bug_training_logic.py"),
    example("bug_leakage.py"),
    example("bug_device.py"),
    example("slow_dataloader.py"),
    example("curve_overfitting.py"),
    example("curve_vanishing_gradients.py"),
    example("curve_exploding_gradients.py"),
]


def english_in(message: str) -> list[str]:
    """The English words of a message meant to be Spanish (code and names left out, see ``CODE``)."""
    words = re.findall(r"\w+", CODE.sub(" ", message))
    return [word for word in words if word in ENGLISH_WORDS]  # lowercase only: CALLS, Logged are names


def test_the_english_word_check_finds_english_and_passes_spanish_with_code():
    assert english_in("torch.log made 2 -Inf from finite inputs — forward, step 5") == ["made", "from", "step"]
    assert english_in("Inf nace aquí: `torch.log` en nan_log_zero.py:24; llame a loss.backward() y max_norm=1.0") == []
    assert english_in("se volvió NaN/Inf (vea `(not replayed)` en train.py:31)") == ["not", "replayed"]
    assert english_in("Logged.forward asigna la variable global CALLS; un array de numpy [5] float64") == []
    assert english_in("`total_loss += loss  # keeps the graph of every step` encadena la pérdida de cada paso") == []


@pytest.mark.timeout(900)
def test_no_english_is_left_in_any_finding_of_a_spanish_doctor():
    """Every finding of the doctor in Spanish, on the NaN programs and on programs with each other kind of finding:
    every clause of every message is Spanish (the first NaN's reason assembled from parts, the phase it names, the
    loss curves' diagnoses), and so is each line the agent writes to the console."""
    kinds: set[str] = set()
    untranslated: dict[str, list[str]] = {}
    with ThreadPoolExecutor(max_workers=3) as pool:
        runs = list(pool.map(lambda path: (path, doctor("--json", path, locale="es")), SPANISH_PROGRAMS))
    for path, done in runs:
        findings = json.loads(done.stdout)["findings"]
        assert findings, (path, done.stderr[-2000:])
        console = [line for line in done.stderr.splitlines() if line.startswith("[tensorsight]")]
        for text in [f["message"] for f in findings] + console:
            if english_in(text):
                untranslated[text] = english_in(text)
        for finding in findings:
            kinds.add(finding["kind"])
            if finding["kind"] == "nonfinite":
                phase = re.search(r" — ([^,(]+?)(?: \(|$)", finding["message"])
                assert phase is not None and phase.group(1) in PHASE_IN_SPANISH, finding["message"]
    assert untranslated == {}
    assert {"nonfinite", "dynamics", "training-logic", "memory", "performance", "leakage", "shape"} <= kinds, kinds
