"""debugpy's description of the environment, built only when one of its logs will keep it.

Armed under a debugger by ``tensorsight.agent.runtime.install`` (``DEBUGGER_FEATURES``). Before it runs the program,
debugpy's ``run_file`` logs a "Pre-launch environment" report: system paths and every installed distribution with
its version, read from each package's metadata (``importlib.metadata``). ``describe_environment`` builds that text
before handing it to a log call that drops it unless a debugpy log file is open (``DEBUGPY_LOG_DIR``, ``logToFile``),
so every launch reads the metadata of all installed packages for nothing: about 85 ms in an environment of 115
packages, on the debugged process's way to the program's first line.

``arm`` wraps ``debugpy.common.log.describe_environment`` so that it builds the report only when a log takes
messages of its level (``info``), and otherwise returns at once (``tensorsight.debugpy_start``, which does the same
for the adapter and the launcher of a "Debug Training" launch). With a debugpy log open, the report is written as
before. The call the debugged process makes on starting comes before the agent is loaded and is left as it is.
Private debugpy API (``log._levels``), checked against debugpy 1.8.x; where it moved, nothing is wrapped.
"""

from __future__ import annotations

import sys

from tensorsight.agent.runtime.guard import report_once
from tensorsight.debugpy_start import quiet_environment_report


def arm(origin: str = "debugger") -> None:
    """Quiet debugpy's environment report in this process (a no-op without debugpy or where its log API moved)."""
    if "debugpy.common.log" not in sys.modules:
        return
    if not quiet_environment_report():
        report_once("environment-report-api", "debugpy's log levels not found: its environment report is kept")
