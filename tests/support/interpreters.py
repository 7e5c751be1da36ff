"""Finds the Python interpreters of other versions on the machine (for the packaging tests), and says how pydevd
traces under the interpreter running the tests (the debuggees of tests/support/dap.py run under it too).

A ``python3.12`` on PATH counts only if it runs: a pyenv shim for a version that is installed but not selected fails
with "command not found". Otherwise pyenv's own install tree is searched (``$PYENV_ROOT`` or ``~/.pyenv``).
scripts/test.sh applies the same rule in shell for the numpy-only tiers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

# pydevd (debugpy 1.8.x) traces with sys.settrace before Python 3.12 and through sys.monitoring (PEP 669) from 3.12
# on, where it turns events off per code object and ``sys.gettrace()`` stays None in the debuggee. What the agent
# does against the settrace tracer's per-call cost (agent.debugger.untraced, untraced_data, runtime.untraced_hooks)
# is armed only under the first: the tests of that machinery check it there, and check its absence under the second.
SETTRACE_DEBUGGER = sys.version_info < (3, 12)


def find_interpreter(version: str) -> str | None:
    """Path of a working ``python<version>`` (e.g. "3.12"), or None when the machine has none."""
    candidates: list[str] = []
    on_path = shutil.which(f"python{version}")
    if on_path:
        candidates.append(on_path)
    pyenv_root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates.extend(str(p) for p in sorted((pyenv_root / "versions").glob(f"{version}.*/bin/python{version}")))
    for candidate in candidates:
        if _reports_version(candidate, version):
            return candidate
    return None


def _reports_version(executable: str, version: str) -> bool:
    try:
        result = subprocess.run(
            [executable, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0 and result.stdout.strip() == version
