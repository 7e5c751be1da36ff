"""``%load_ext tensorsight`` in IPython and Jupyter kernels: the ``tensorsight`` builtin and the armed agent in the
process, whether or not a debugger has loaded our plugin yet.

IPython calls ``tensorsight.load_ipython_extension`` (a thin forwarder in the package's ``__init__``), which calls
``load``. ipykernel imports its embedded debugpy when the kernel starts, so with the package installed in the kernel's
environment pydevd has already loaded our plugin and the agent is armed: ``%load_ext`` then only confirms it. It
matters where no debugger is loaded (a terminal IPython, a kernel without debugpy). Either way the agent is installed
as for a debugger session, because that is how a kernel is debugged ("Debug Cell", "Run by Line", JupyterLab's
debugger): a NaN/Inf stop armed from a cell (``tensorsight.break_on_nonfinite()``) pauses in the cell's frame when a
debug client is attached, and degrades to a ``[tensorsight]`` line in the cell's output otherwise.
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
        "[tensorsight] agent armed: tensor summaries in the debugger's Variables, "
        "conditions such as tensorsight.nan(x), tensorsight.break_on_nonfinite() to stop at the first NaN/Inf\n"
        if armed
        else "[tensorsight] the agent could not install its builtin here\n"
    )


def load_ipython_extension(ipython: Any) -> None:
    """IPython's entry point for ``%load_ext tensorsight``: the package forwards the name here, lazily."""
    load(ipython)
