"""The doctor on the learning families of the realistic suite (gan_two_optimizers, finetune_frozen, manual_sgd,
eval_mode_chain, pretrained_encoder): each run-time learning finding at its ``# BUG:`` line, in English and in
Spanish (a real subprocess per script and language), and the graph-reuse error still raised by the program."""

from __future__ import annotations

import json
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from support import realistic
from support.paths import PYHELPERS, PYTHON
from tensorsight.core import protocol

pytestmark = pytest.mark.timeout(600)

# script -> (the check in the finding's details, the start of its Spanish message)
EXPECTED = {
    "gan_two_optimizers/bug_generator_optimizer_wrong_params.py": (
        "parameters-in-no-optimizer",
        "6 parámetro(s) reciben gradientes pero ningún optimizador los contiene",
    ),
    "gan_two_optimizers/bug_undetached_fake.py": ("graph-reused", "`fake` llega a esta pérdida con su grafo"),
    "finetune_frozen/bug_neck_under_no_grad.py": (
        "parameters-never-learn",
        "2 parámetro(s) entrenable(s) de optimizer no recibieron ningún gradiente",
    ),
    "manual_sgd/bug_grads_never_cleared.py": (
        "gradients-never-cleared",
        "Este backward() suma en .grad sin que nada lo ponga a cero",
    ),
    "eval_mode_chain/bug_left_in_eval.py": ("backward-in-eval-mode", "Sequential pasó aquí a modo de evaluación"),
    "pretrained_encoder/bug_probe_on_untrained_encoder.py": (
        "frozen-at-initialisation",
        "4 parámetro(s) están congelados (requires_grad=False) mientras conservan su inicialización aleatoria",
    ),
}
SCRIPTS = {script.name: script for script in realistic.discover()}
ENGLISH = frozenset("the was were not of from with and its is are which this that it by has have never".split())
CODE = re.compile(r"`[^`]*`|\S*[._=\[\]{}/:<>()]\S*")


def doctor(path: str, locale: str | None) -> tuple[dict, subprocess.CompletedProcess[str]]:
    env = {k: v for k, v in os.environ.items() if k not in (protocol.ENV_LOCALE, "TENSORSIGHT_OPTIONS")}
    env.update({"PYTHONPATH": PYHELPERS, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    if locale is not None:
        env[protocol.ENV_LOCALE] = locale
    done = subprocess.run(
        [PYTHON, "-m", "tensorsight", "doctor", "--json", path],
        capture_output=True,
        text=True,
        env=env,
        cwd=os.path.dirname(path),
        timeout=300,
    )
    assert done.stdout.strip(), done.stderr[-3000:]
    return json.loads(done.stdout), done


@pytest.fixture(scope="module")
def runs() -> dict[tuple[str, str | None], tuple[dict, subprocess.CompletedProcess[str]]]:
    wanted = [(name, locale) for name in EXPECTED for locale in (None, "es")]
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda case: doctor(SCRIPTS[case[0]].path, case[1]), wanted))
    return dict(zip(wanted, done, strict=True))


def learning_findings(document: dict, check: str) -> list[dict]:
    return [f for f in document["findings"] if f.get("details", {}).get("check") == check]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_learning_finding_is_at_the_bug_line_in_english(name, runs):
    document, _ = runs[(name, None)]
    check, _spanish = EXPECTED[name]
    (finding,) = learning_findings(document, check)
    markers = {(m.file, m.line) for m in SCRIPTS[name].markers}
    assert (os.path.realpath(finding["file"]), finding["line"]) in {(os.path.realpath(f), n) for f, n in markers}
    assert finding["kind"] == "training-logic" and finding["severity"] in ("warning", "error")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_learning_finding_speaks_spanish(name, runs):
    english, _ = runs[(name, None)]
    document, _ = runs[(name, "es")]
    check, spanish = EXPECTED[name]
    (finding,) = learning_findings(document, check)
    (in_english,) = learning_findings(english, check)
    assert finding["message"].startswith(spanish), finding["message"]
    assert (finding["file"], finding["line"], finding["kind"]) == (
        in_english["file"],
        in_english["line"],
        "training-logic",
    )
    words = re.findall(r"\w+", CODE.sub(" ", finding["message"]))
    assert [w for w in words if w in ENGLISH] == [], finding["message"]


def test_the_graph_reuse_error_is_explained_and_still_raised(runs):
    document, done = runs[("gan_two_optimizers/bug_undetached_fake.py", None)]
    assert "backward through the graph a second time" in document["error"]
    assert "RuntimeError: Trying to backward through the graph a second time" in done.stderr
    (finding,) = learning_findings(document, "graph-reused")
    assert finding["details"]["tensor"] == "fake" and "`fake.detach()`" in finding["message"]
