"""Turn off pydevd's line breakpoints in this process while the editor keeps showing them as verified.

Called by ``agent.distributed.ranks`` for the ``ranks`` launch option: on a rank the user left out, no line
breakpoint stops (and none costs tracing). pydevd funnels every change of a file's line breakpoints through
``PyDB.consolidate_breakpoints``; ours hands it an empty set. That is private pydevd API (checked on debugpy 1.8.x),
so ``drop_line_breakpoints`` answers False, changing nothing, when the hook is missing, and the caller reports it.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_MARK = "_tensorsight_no_line_breakpoints"


def running_pydevd_class() -> Any:
    """pydevd's ``PyDB`` class as the running debugger uses it; None without a debugger.

    In the process debugpy launches, pydevd is the module ``pydevd``; in a child it follows (``subProcess``, e.g. a
    torchrun worker) pydevd.py runs as ``__main__`` and calls our plugin before it runs the user's file.
    """
    for name in ("pydevd", "__main__"):
        module = sys.modules.get(name)
        if os.path.basename(str(getattr(module, "__file__", ""))) == "pydevd.py" and hasattr(module, "PyDB"):
            return module.PyDB  # type: ignore[union-attr]
    return None


def drop_line_breakpoints(py_db_class: Any = None) -> bool:
    """Make ``py_db_class`` (default: the running debugger's) keep no line breakpoint; idempotent.

    True when the patch is in place (now or from an earlier call), False when there is no such hook to patch.
    """
    py_db_class = py_db_class if py_db_class is not None else running_pydevd_class()
    original = getattr(py_db_class, "consolidate_breakpoints", None)
    if original is None:
        return False
    if getattr(original, _MARK, False):
        return True

    def consolidate_no_breakpoints(self: Any, filename: Any, id_to_breakpoint: Any, file_to_line: Any) -> Any:
        return original(self, filename, {}, file_to_line)

    setattr(consolidate_no_breakpoints, _MARK, True)
    py_db_class.consolidate_breakpoints = consolidate_no_breakpoints
    return True


__all__ = ["drop_line_breakpoints", "running_pydevd_class"]
