"""debugpy's adapter, launcher and debugged program started without the environment report nobody logs.

Each of debugpy's processes begins by describing its environment for its log: system paths and every installed
distribution with its version, read from each package's metadata (``importlib.metadata``). ``describe_environment``
builds that text before handing it to a log call that drops it unless a debugpy log is open (``DEBUGPY_LOG_DIR``,
``logToFile``), so a launch read the metadata of every installed package four times for nothing, all before the
program's first line (about 0.5 s of the start in an environment of 115 packages, more in a typical ML environment).

A "Debug Training" launch therefore starts the three processes through this package:

- the adapter as ``python -m tensorsight.debugpy_start.adapter`` (the extension's adapter factory);
- the launcher from ``debugpy_start/launcher``, the ``debugLauncherPath`` of the launch request;
- the debugged program through ``debugpy_start/debugpy_launcher.py``, which that launcher puts in front of debugpy's
  own command line for the program (``debuggee_command``).

Each applies ``quiet_environment_report`` and then runs debugpy's own entry point unchanged, with the arguments it
was given. The agent quiets the report the program's debugpy makes just before the program runs as well
(``agent.debugger.environment_report``), also in sessions started otherwise. With a debugpy log open, every report is
written as before. Standard library only; debugpy is imported from wherever the process already finds it.
"""

from __future__ import annotations

import functools
from typing import Any

_MARK = "__tensorsight_quiet_report__"


def quiet_environment_report() -> bool:
    """Make ``debugpy.common.log.describe_environment`` build its report only when a log takes ``info`` messages.

    False, changing nothing, where debugpy is not importable or its log API moved (``_levels``).
    """
    try:
        from debugpy.common import log
    except Exception:  # noqa: BLE001 - no debugpy here: nothing to quiet
        return False
    original = getattr(log, "describe_environment", None)
    if original is None or not isinstance(getattr(log, "_levels", None), (set, frozenset)):
        return False
    if not getattr(original, _MARK, False):
        log.describe_environment = _only_when_logged(log, original)
    return True


def debuggee_command(cmdline: list[str], debugpy_dir: str, start_file: str) -> list[str]:
    """debugpy's command line for the debugged program with ``start_file`` run in front of debugpy's folder.

    The launcher builds ``[python, *options, DEBUGPY_DIR, "--connect", ...]``; a command line without that pair (a
    run without debugging) is returned as it is.
    """
    for index, part in enumerate(cmdline[:-1]):
        if part == debugpy_dir and cmdline[index + 1] == "--connect":
            return [*cmdline[:index], start_file, *cmdline[index:]]
    return list(cmdline)


def _only_when_logged(log: Any, original: Any) -> Any:
    @functools.wraps(original)
    def describe_environment(header: Any) -> Any:
        levels = getattr(log, "_levels", None)
        if isinstance(levels, (set, frozenset)) and "info" not in levels:
            return None
        return original(header)

    setattr(describe_environment, _MARK, True)
    return describe_environment
