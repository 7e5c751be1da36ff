"""How the framework tests run their programs (tests/programs/frameworks): the real doctor, or the event harness
(tests/programs/agent_events.py) with the doctor's options, in a child process with PYTHONPATH set as the extension
does; nothing may reach the network (the Hugging Face hub is switched offline), and torch runs one thread, which keeps
a tiny model's run short on a busy machine (its thread pool, fighting other processes for two cores, made the
GPT-2 run 30× slower) without changing a single value it computes."""

from __future__ import annotations

import json
import math
import os
from typing import Any

from support.doctor_report import observed
from support.paths import PYHELPERS, PYTHON, marked_lines, program

DOCTOR_OPTIONS = {"breakOnNonFinite": True, "measure": True, "observeShapes": True, "checkLeakage": True}
TIMEOUT = 240


def framework_program(name: str) -> str:
    return program(os.path.join("frameworks", name))


def environment() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": PYHELPERS,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
    }


def doctor_command(name: str, *args: str) -> list[str]:
    return [PYTHON, "-m", "tensorsight", "doctor", "--json", framework_program(name), *args]


def events_command(name: str, *args: str) -> list[str]:
    return [PYTHON, program("agent_events.py"), json.dumps(DOCTOR_OPTIONS), framework_program(name), *args]


def events_of(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def line(name: str, mark: str) -> int:
    """The line marked ``# @<mark>`` in a framework program (``"log train"`` finds ``# @log train``)."""
    marker, _, label = mark.partition(" ")
    return marked_lines(framework_program(name), "@" + marker)[label]


def runtime(document: dict[str, Any], kind: str | None = None) -> list[dict[str, Any]]:
    """Findings made while the script ran (static rules carry a rule code), of ``kind`` if given."""
    return [f for f in document["findings"] if (kind is None or f["kind"] == kind) and observed(f)]


def loud(document: dict[str, Any], but: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Warnings and errors, static or not, except those of the kinds in ``but``."""
    return [f for f in document["findings"] if f["severity"] in ("warning", "error") and f["kind"] not in but]


def close(a: float, b: float, rel: float) -> bool:
    return math.isclose(a, b, rel_tol=rel)
