"""TensorSight stands aside while torch compiles, traces or exports (``agent.runtime.transforming``): programs that use
``torch.compile(fullgraph=True)`` with a TorchScript loss, a compiled loop with a graph break and an evaluation pass,
``torch.jit.trace`` and ``torch.export`` (tests/programs/compiled/) print exactly what they print under plain Python,
with the same warnings, under the doctor and under a Debug Training session with break-on-NaN on.

What the programs print is the evidence: the graphs their own backend captured (operators added by a hook of ours
would show), Dynamo's frame, graph and recompile counters, the TorchScript trace's nodes (``torch.jit.trace`` checks
a second trace against the first and fails when they differ) and the exported graph's operators.
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from support.dap import DebugSession
from support.paths import PYHELPERS, PYTHON, program

PROGRAMS = ("compiled_fullgraph.py", "compiled_loop.py", "traced_scorer.py", "exported_classifier.py")
_LOG_PREFIX = re.compile(r"^[IWE]\d{4} [\d:.]+ +\d+ ")  # torch's logging: date, time and process id vary per run


def path_of(name: str) -> str:
    return program(os.path.join("compiled", name))


def warnings_in(stderr: str) -> list[str]:
    """Python warnings (their location line) and torch's logged warnings, without what varies per run."""
    found = []
    for line in stderr.splitlines():
        if _LOG_PREFIX.match(line):
            found.append(_LOG_PREFIX.sub("", line))
        elif re.search(r"\b\w*Warning: ", line):
            found.append(line)
    return found


def run_plain(name: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("TENSORSIGHT_")}
    done = subprocess.run(
        [PYTHON, path_of(name)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=os.path.dirname(path_of(name)),
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def plain() -> dict[str, subprocess.CompletedProcess[str]]:
    return {name: run_plain(name) for name in PROGRAMS}


def test_the_programs_show_what_the_tests_compare(plain):
    """The evidence is there under plain Python (a program that printed nothing would compare equal to anything)."""
    assert "graph 0: 4 calls: linear relu linear squeeze" in plain["compiled_fullgraph.py"].stdout
    assert "dynamo recompiles 0" in plain["compiled_loop.py"].stdout
    assert "Graph break from `Tensor.item()`" in plain["compiled_loop.py"].stderr
    assert re.search(r"traced graph: \d+ nodes: aten::linear", plain["traced_scorer.py"].stdout)
    assert "operators: aten.linear.default aten.gelu.default" in plain["exported_classifier.py"].stdout
    assert any("UserWarning" in w for w in warnings_in(plain["traced_scorer.py"].stderr))


@pytest.mark.parametrize("name", PROGRAMS)
def test_under_the_doctor_the_program_prints_what_plain_python_prints(name, plain):
    env = {**os.environ, "PYTHONPATH": PYHELPERS}
    done = subprocess.run(
        [PYTHON, "-m", "tensorsight", "doctor", path_of(name)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=os.path.dirname(path_of(name)),
    )
    program_output, _, report = done.stdout.partition("TensorSight doctor:")
    assert program_output == plain[name].stdout, report
    assert "the script stopped with" not in report
    assert warnings_in(done.stderr) == warnings_in(plain[name].stderr)


def without_frame_count(stdout: str) -> str:
    """Under a debugger Dynamo also counts the debugger's own Python frames that run inside a compiled call (pydevd's
    file-type checks on a new frame) among the frames it was handed, as it does under stock debugpy; compiled graphs
    and recompiles are compared exactly."""
    return re.sub(r"(?m)^dynamo frames \d+ ok \d+\n", "", stdout)


@pytest.mark.parametrize("name", PROGRAMS)
def test_under_debug_training_the_program_prints_what_plain_python_prints(name, plain):
    path = path_of(name)
    with DebugSession.launch(path, options={"breakOnNonFinite": True}, timeout=120) as session:
        exit_code = session.wait_for_exit(timeout=300)
        stdout = "".join(session.output_by_category.get("stdout", []))
        stderr = "".join(session.output_by_category.get("stderr", []))
    assert exit_code == 0, stderr
    assert without_frame_count(stdout) == without_frame_count(plain[name].stdout)
    assert warnings_in(stderr) == warnings_in(plain[name].stderr)
