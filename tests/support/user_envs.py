"""User environments for the packaging tests: the wheel built from a clean copy of the sources, and virtual
environments that hold it the way ``pip install tensorsight`` would, with no PYTHONPATH and no repository on sys.path.

Environments are cached under ``.venvs/packaging/`` (gitignored): one per Python version and dependency set, built
once (downloads take tens of seconds), then reused; the TensorSight wheel in it is replaced whenever the sources'
hash changes, so each run tests the current code. On Python 3.11 the environment borrows numpy, torch, debugpy and
ipykernel from the development ``.venv`` through a path entry (torch has no wheel for 3.12/3.13 on these machines and
a CPU build is large); that ``.venv`` holds no TensorSight, so the plugin can only come from the installed wheel.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from .interpreters import find_interpreter
from .paths import REPO

CACHE = Path(REPO) / ".venvs" / "packaging"
# What a user's environment holds besides TensorSight on the numpy-only versions (the pins of the dev .venv).
USER_REQUIREMENTS = Path(REPO) / "tests" / "packaging" / "user-requirements.txt"
WHEEL_SOURCES = ("pyproject.toml", "README.md", "pyhelpers")


def source_hash() -> str:
    """Hash of everything that goes into the wheel (caches stay valid until one of these files changes)."""
    digest = hashlib.sha256()
    for name in WHEEL_SOURCES:
        root = Path(REPO) / name
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in files:
            if "__pycache__" in path.parts:
                continue
            digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build_wheel(out_dir: Path) -> Path:
    """Build the wheel from a copy of the sources (never from the working tree, whose ``build/`` may be stale)."""
    staging = out_dir / "src"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name in WHEEL_SOURCES:
        source = Path(REPO) / name
        if source.is_dir():
            shutil.copytree(source, staging / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(source, staging / name)
    dist = out_dir / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(staging)])
    (wheel,) = dist.glob("tensorsight-*.whl")
    return wheel


@dataclass(frozen=True)
class UserEnvironment:
    """A virtual environment with the wheel installed; ``python`` is its interpreter."""

    version: str
    python: str
    has_torch: bool


def user_environment(version: str, wheel: Path, wheel_key: str) -> UserEnvironment | str:
    """The environment for ``version`` with ``wheel`` installed, or the reason it cannot exist on this machine."""
    borrow = version == f"{sys.version_info.major}.{sys.version_info.minor}" and sys.prefix != sys.base_prefix
    base = getattr(sys, "_base_executable", sys.executable) if borrow else find_interpreter(version)
    if base is None:
        return f"no Python {version} interpreter on this machine (looked for python{version} on PATH and in pyenv)"
    requirements = "borrow the dev .venv" if borrow else USER_REQUIREMENTS.read_text()
    deps_key = hashlib.sha256(f"{base}\n{requirements}".encode()).hexdigest()[:12]
    venv = CACHE / f"py{version}-{deps_key}"
    python = venv / "bin" / "python"
    ready = venv / ".deps-ready"
    if not ready.exists():
        shutil.rmtree(venv, ignore_errors=True)
        run([base, "-m", "venv", str(venv)])
        if borrow:
            # a plain path line: the dev .venv's packages become importable, its .pth hooks do not run
            site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).strip())
            (site / "zz-dev-venv-packages.pth").write_text(sysconfig.get_path("purelib") + "\n")
        else:
            pip(python, "install", "-r", str(USER_REQUIREMENTS))
        ready.write_text(requirements)
    installed = venv / ".wheel-installed"
    if not installed.exists() or installed.read_text() != wheel_key:
        pip(python, "uninstall", "--yes", "tensorsight")
        pip(python, "install", "--no-deps", "--no-index", str(wheel))
        installed.write_text(wheel_key)
    has_torch = subprocess.run([str(python), "-c", "import torch"], capture_output=True, env=clean_env()).returncode
    return UserEnvironment(version=version, python=str(python), has_torch=has_torch == 0)


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment without anything that would put TensorSight on a path by hand."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env.update(extra)
    return env


def pip(python: Path, *args: str) -> None:
    run([str(python), "-m", "pip", "--disable-pip-version-check", "--quiet", *args])


def run(command: list[str]) -> str:
    result = subprocess.run(command, capture_output=True, text=True, env=clean_env(), timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result.stdout
