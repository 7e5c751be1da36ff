"""The wheel ships the debugger's entry point (pydevd_plugins/extensions) as a shared namespace, depends on nothing
at run time (the language server's packages are the ``server`` extra), and installs the ``tensorsight`` command."""

from __future__ import annotations

import subprocess
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from support.paths import program
from support.user_envs import UserEnvironment, clean_env

pytestmark = pytest.mark.subprocess

NAMESPACE_LINE = "__path__ = pkgutil.extend_path(__path__, __name__)"


def test_wheel_holds_the_plugin_as_a_pkgutil_namespace_beside_the_package(wheel: tuple[Path, str]) -> None:
    with zipfile.ZipFile(wheel[0]) as archive:
        names = set(archive.namelist())
        inits = {name: archive.read(name).decode() for name in names if name.startswith("pydevd_plugins/")}
    assert "pydevd_plugins/extensions/pydevd_plugin_tensorsight.py" in names
    assert "tensorsight/agent/runtime/install.py" in names and "tensorsight/cli/doctor.py" in names
    assert "tensorsight/l10n/es.json" in names  # the Python side's Spanish (core/l10n)
    # the same declaration as pydevd's own pydevd_plugins/__init__.py: every distribution's portion stays visible
    for package in ("pydevd_plugins/__init__.py", "pydevd_plugins/extensions/__init__.py"):
        assert NAMESPACE_LINE in inits[package], inits[package]
    assert not any(name.startswith(("tests/", "examples/", "extension/")) for name in names)


def test_no_run_time_dependency_and_the_server_is_an_extra(wheel: tuple[Path, str]) -> None:
    with zipfile.ZipFile(wheel[0]) as archive:
        meta_name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(meta_name).decode())
        entry_points = archive.read(meta_name.replace("METADATA", "entry_points.txt")).decode()
    requires = metadata.get_all("Requires-Dist") or []
    assert [r for r in requires if "extra ==" not in r] == []
    server = sorted(r.split(";")[0].split("<")[0].split(">")[0] for r in requires if 'extra == "server"' in r)
    assert server == ["lsprotocol", "nvidia-ml-py", "pygls"]
    assert "tensorsight = tensorsight.cli:console_main" in entry_points


def test_console_script_runs_the_doctor(user_env: UserEnvironment) -> None:
    command = str(Path(user_env.python).parent / "tensorsight")
    result = subprocess.run(
        [command, "doctor", "--json", program("numpy_steps.py")],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=120,
    )
    assert '"findings"' in result.stdout, result.stderr
    usage = subprocess.run([command, "--help"], capture_output=True, text=True, env=clean_env(), timeout=60)
    assert usage.returncode == 0 and "doctor" in usage.stdout and usage.stdout.startswith("usage: tensorsight")
