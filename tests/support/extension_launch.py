"""The launch the extension builds (``extension/src/common/pythonLaunch.ts``), for the Python tests.

``extension_launch`` bundles ``tests/extension/support/printLaunch.ts`` once per test session with the repository's
esbuild and runs it with node, so a test starts the language server or a CLI tool with exactly the argv, working
directory and environment the extension would spawn: one launch function, checked from both languages.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any

from support.paths import REPO

PRINTER_SOURCE = os.path.join(REPO, "tests", "extension", "support", "printLaunch.ts")
ESBUILD = os.path.join(REPO, "node_modules", ".bin", "esbuild")


@functools.lru_cache(maxsize=1)
def _printer() -> str:
    folder = tempfile.mkdtemp(prefix="tensorsight-launch-")
    atexit.register(shutil.rmtree, folder, True)
    bundle = os.path.join(folder, "printLaunch.js")
    subprocess.run(
        [
            ESBUILD,
            PRINTER_SOURCE,
            "--bundle",
            "--platform=node",
            "--format=cjs",
            "--log-level=warning",
            f"--outfile={bundle}",
        ],
        check=True,
        timeout=120,
    )
    return bundle


@functools.lru_cache(maxsize=64)
def _launch(request: str) -> str:
    done = subprocess.run(["node", _printer(), request], check=True, capture_output=True, text=True, timeout=60)
    return done.stdout


def extension_launch(kind: str, env: dict[str, str], *, python: str = sys.executable, **fields: str) -> dict[str, Any]:
    """``{"command", "args", "env", "cwd"}`` as the extension installed at the repository root would start ``kind``
    (``"server"``, or ``"tool"`` with ``tool``, ``target`` and ``cwd``); ``bundledLibs`` replaces the build's
    ``extension/bundled/libs``."""
    request = {"kind": kind, "python": python, "root": REPO, "env": env, **fields}
    return dict(json.loads(_launch(json.dumps(request, sort_keys=True))))
