"""Notebooks: with the wheel installed in the kernel's environment, an ipykernel debugged through the Jupyter debug
protocol (what JupyterLab and VS Code's "Debug Cell" send on the control channel) shows our summaries and honours a
``tensorsight.nan(...)`` breakpoint condition on the cell's file; ``%load_ext tensorsight`` arms the agent without a
debugger; ``tensorsight.break_on_nonfinite()`` from a cell stops a debugged cell at the op that made an Inf."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.jupyter_kernel import Kernel
from support.user_envs import UserEnvironment, clean_env

pytestmark = pytest.mark.subprocess

CELL = """\
import numpy as np
grid = np.arange(12, dtype=np.float64).reshape(3, 4)
total = 0.0
for step, shift in enumerate([0.0, 0.5, 2.0, 0.25]):
    with np.errstate(invalid="ignore"):
        roots = np.sqrt(np.array([4.0, 1.0]) - shift)
    total += float(roots[0])
"""
CONDITION_LINE = 7


def start_debugging(kernel: Kernel) -> None:
    """The start sequence of JupyterLab's debugger: initialize, attach, configurationDone."""
    kernel.debug(
        "initialize",
        {
            "clientID": "tensorsight-tests",
            "adapterID": "python",
            "pathFormat": "path",
            "linesStartAt1": True,
            "columnsStartAt1": True,
            "supportsVariableType": True,
        },
    )
    kernel.debug("attach", {})


def by_name(variables: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in variables}


def test_debug_cell_shows_summaries_and_honours_a_nan_condition(user_env: UserEnvironment, tmp_path: Path) -> None:
    with Kernel.start(user_env.python, tmp_path) as kernel:
        start_debugging(kernel)
        source = kernel.debug("dumpCell", {"code": CELL})["body"]["sourcePath"]
        placed = kernel.debug(
            "setBreakpoints",
            {
                "source": {"path": source},
                "breakpoints": [{"line": CONDITION_LINE, "condition": "tensorsight.nan(roots)"}],
            },
        )
        assert placed["body"]["breakpoints"][0]["verified"]
        kernel.debug("configurationDone")
        cell = kernel.submit(CELL)
        stopped = kernel.wait_for_debug_event("stopped")
        thread = stopped["body"]["threadId"]
        frame = kernel.debug("stackTrace", {"threadId": thread})["body"]["stackFrames"][0]
        assert (frame["source"]["path"], frame["line"]) == (source, CONDITION_LINE)
        scopes = kernel.debug("scopes", {"frameId": frame["id"]})["body"]["scopes"]
        reference = next(s for s in scopes if s["name"].lower().startswith("locals"))["variablesReference"]
        local = by_name(kernel.debug("variables", {"variablesReference": reference})["body"]["variables"])
        assert local["step"]["value"] == "2"  # the condition held at the NaN step only
        assert local["grid"]["value"] == "f64[3, 4] ndarray μ=5.5 σ=3.61 [0, 11]"
        assert "NaN×1" in local["roots"]["value"]
        # the Variables panel of JupyterLab asks inspectVariables for the kernel's globals
        inspected = by_name(kernel.debug("inspectVariables")["body"]["variables"])
        assert inspected["grid"]["value"] == "f64[3, 4] ndarray μ=5.5 σ=3.61 [0, 11]"
        kernel.debug("continue", {"threadId": thread})
        reply, _ = kernel.finish(cell)
        assert reply["status"] == "ok"


PROBE = """\
import numpy as np
print(tensorsight.summarize(np.arange(12.0).reshape(3, 4)), tensorsight.nan(np.array([np.nan])))
"""


def test_load_ext_in_a_kernel(user_env: UserEnvironment, tmp_path: Path) -> None:
    with Kernel.start(user_env.python, tmp_path) as kernel:
        reply, output = kernel.execute("%load_ext tensorsight")
        assert reply["status"] == "ok" and "[tensorsight] agent armed" in output
        reply, output = kernel.execute(PROBE)
        assert reply["status"] == "ok", reply
        assert output.strip() == "f64[3, 4] ndarray μ=5.5 σ=3.61 [0, 11] True"


def test_load_ext_in_ipython_without_a_debugger(user_env: UserEnvironment, tmp_path: Path) -> None:
    """A terminal IPython loads no debugger, so only ``%load_ext`` brings the builtin."""
    code = "import builtins\nprint('before:', hasattr(builtins, 'tensorsight'))\n%load_ext tensorsight\n" + PROBE
    result = subprocess.run(
        [user_env.python, "-m", "IPython", "--quick", "--no-banner", "--colors=nocolor", "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean_env(IPYTHONDIR=str(tmp_path / "ipython")),
        timeout=120,
    )
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "before: False", result.stdout + result.stderr
    assert lines[1].startswith("[tensorsight] agent armed")
    assert lines[2] == "f64[3, 4] ndarray μ=5.5 σ=3.61 [0, 11] True"


INF_CELL = """\
import torch
layer = torch.nn.Linear(2, 1)
with torch.no_grad():
    layer.weight.fill_(2.0)
    layer.bias.zero_()
out = layer(torch.full((1, 2), 3e38))
"""


def test_break_on_nonfinite_from_a_cell_stops_at_the_cell_line(torch_env: UserEnvironment, tmp_path: Path) -> None:
    with Kernel.start(torch_env.python, tmp_path) as kernel:
        # torch imported before the debugger attaches, as in a notebook whose first cell ran already (importing it
        # under the debugger's tracing costs tens of seconds on a busy machine)
        reply, _ = kernel.execute("import torch", timeout=180)
        assert reply["status"] == "ok"
        start_debugging(kernel)
        kernel.debug("configurationDone")
        reply, _ = kernel.execute("%load_ext tensorsight")
        assert reply["status"] == "ok"
        reply, _ = kernel.execute("print(tensorsight.break_on_nonfinite())")
        assert reply["status"] == "ok"
        source = kernel.debug("dumpCell", {"code": INF_CELL})["body"]["sourcePath"]
        cell = kernel.submit(INF_CELL)
        stopped = kernel.wait_for_debug_event("stopped", timeout=180)
        thread = stopped["body"]["threadId"]
        frame = kernel.debug("stackTrace", {"threadId": thread})["body"]["stackFrames"][0]
        assert (frame["source"]["path"], frame["line"]) == (source, 6)
        info = kernel.debug("exceptionInfo", {"threadId": thread})["body"]
        assert "Inf" in info["description"], info
        kernel.debug("continue", {"threadId": thread})
        reply, _ = kernel.finish(cell)
        assert reply["status"] == "ok"
