"""debugpy's description of the environment, built only when one of its logs will keep it.

Armed under a debugger by ``tensorsight.agent.runtime.install`` (``DEBUGGER_FEATURES``). Before it runs the program,
debugpy's ``run_file`` logs a "Pre-launch environment" report: system paths and every installed distribution with
its version, read from each package's metadata (``importlib.metadata``). ``describe_environment`` builds that text
before handing it to a log call that drops it unless a debugpy log file is open (``DEBUGPY_LOG_DIR``, ``logToFile``),
so every launch reads the metadata of all installed packages for nothing: about 85 ms in an environment of 115
packages, on the debugged process's way to the program's first line.

``arm`` wraps ``debugpy.common.log.describe_environment`` so that it builds the report only when a log takes
messages of its level (``info``), and otherwise returns at once. With a debugpy log open, the report is written as
before. The earlier calls in the adapter, the launcher and the debugged process's own start come before the agent
is loaded and are left as they are. Private debugpy API (``log._levels``), checked against debugpy 1.8.x; where it
moved, nothing is wrapped.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

from tensorsight.agent.runtime.guard import report_once

_MARK = "__tensorsight_environment_report__"


def arm(origin: str = "debugger") -> None:
    """Wrap debugpy's ``describe_environment`` once (a no-op without debugpy or where its log API moved)."""
    log = sys.modules.get("debugpy.common.log")
    original = getattr(log, "describe_environment", None)
    if original is None:
        return
    if not isinstance(getattr(log, "_levels", None), (set, frozenset)):
        report_once("environment-report-api", "debugpy's log levels not found: its environment report is kept")
        return
    if not getattr(original, _MARK, False):
        setattr(log, "describe_environment", _only_when_logged(log, original))


def _only_when_logged(log: Any, original: Any) -> Any:
    @functools.wraps(original)
    def describe_environment(header: Any) -> Any:
        levels = getattr(log, "_levels", None)
        if isinstance(levels, (set, frozenset)) and "info" not in levels:
            return None
        return original(header)

    setattr(describe_environment, _MARK, True)
    return describe_environment
