"""``%load_ext tensorsight`` in IPython and Jupyter kernels: the ``tensorsight`` builtin and the armed agent in the
kernel process, without a debugger having to start first.

IPython calls ``tensorsight.load_ipython_extension`` (a thin forwarder in the package's ``__init__``), which calls
``load``. A kernel is debugged through ipykernel's embedded debugpy ("Debug Cell", "Run by Line", JupyterLab's
debugger), so the agent is installed as for a debugger session: when a debug client attaches, pydevd loads our plugin
(``pydevd_plugins``, installed with the package), which puts our Variables providers first and finds the agent
already armed; a NaN/Inf stop armed from a cell (``tensorsight.break_on_nonfinite()``) then pauses in the cell's
frame. With no client attached, stops degrade to a ``[tensorsight]`` line in the cell's output.
"""

from __future__ import annotations

import builtins
import sys
from typing import Any

from tensorsight.agent.runtime.guard import never_raise
from tensorsight.agent.runtime.install import install


@never_raise()
def load(ipython: Any = None) -> None:
    """Install the agent in this kernel (idempotent) and say so once in the cell's output."""
    install("debugger")
    armed = hasattr(builtins, "tensorsight")
    sys.stdout.write(
        "[tensorsight] agent armed in this kernel: tensor summaries in the debugger's Variables, "
        "conditions such as tensorsight.nan(x), tensorsight.break_on_nonfinite() to stop at the first NaN/Inf\n"
        if armed
        else "[tensorsight] the agent could not install its builtin in this kernel\n"
    )
