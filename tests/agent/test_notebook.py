"""``agent.notebook``: ``%load_ext tensorsight`` arms the agent in an IPython kernel and says so in the cell output.

The real path runs in a fresh interpreter (a real IPython shell, the ``%load_ext`` magic, the package's lazy
forwarder), since installing the agent arms process-wide features this test process must not keep. The wording and
the exception firewall are checked in-process with the installer replaced.
"""

from __future__ import annotations

import builtins
import json
import os
import subprocess
import textwrap

import pytest

from support.paths import PYHELPERS, PYTHON
from tensorsight.agent import notebook
from tensorsight.agent.runtime import guard

ARMED = "[tensorsight] agent armed:"

KERNEL = textwrap.dedent(
    """
    import builtins, json, sys
    from IPython.core.interactiveshell import InteractiveShell
    from tensorsight.agent.runtime import install

    before = sys.excepthook
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "tensorsight")
    shell.run_line_magic("reload_ext", "tensorsight")
    print(json.dumps({
        "origin": install.installed_origin(),
        "builtin": getattr(builtins, "tensorsight", None) is sys.modules["tensorsight"],
        "excepthook_armed": sys.excepthook is not before,
        "notebook_loaded": "tensorsight.agent.notebook" in sys.modules,
    }))
    """
)


def test_load_ext_in_a_real_ipython_shell_arms_the_agent_as_under_a_debugger(tmp_path):
    env = {**os.environ, "PYTHONPATH": PYHELPERS, "IPYTHONDIR": str(tmp_path)}
    env.pop("TENSORSIGHT_OPTIONS", None)
    proc = subprocess.run([PYTHON, "-c", KERNEL], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert [line for line in lines if line.startswith("[tensorsight]")] == [lines[0], lines[1]]
    assert lines[0].startswith(ARMED) and "tensorsight.nan(x)" in lines[0] and "break_on_nonfinite()" in lines[0]
    assert json.loads(lines[-1]) == {
        "origin": "debugger",  # how a kernel is debugged: the debugger's features, the exception hook included
        "builtin": True,
        "excepthook_armed": True,
        "notebook_loaded": True,
    }
    assert "internal error" not in proc.stderr


@pytest.fixture
def installer(monkeypatch):
    monkeypatch.setattr(guard, "_reported", set())
    calls: list[str] = []
    monkeypatch.setattr(notebook, "install", calls.append)
    return calls


def test_load_installs_for_the_debugger_and_confirms(installer, monkeypatch, capsys):
    monkeypatch.setattr(builtins, "tensorsight", object(), raising=False)
    notebook.load_ipython_extension(object())
    assert installer == ["debugger"]
    assert capsys.readouterr().out.startswith(ARMED)


def test_load_says_when_the_builtin_is_missing(installer, monkeypatch, capsys):
    monkeypatch.delattr(builtins, "tensorsight", raising=False)
    notebook.load()
    assert capsys.readouterr().out == "[tensorsight] the agent could not install its builtin here\n"


def test_load_never_raises_into_the_kernel(monkeypatch, capsys):
    monkeypatch.setattr(guard, "_reported", set())

    def broken(origin):
        raise RuntimeError("install bug")

    monkeypatch.setattr(notebook, "install", broken)
    assert notebook.load_ipython_extension(object()) is None
    assert "install bug" in capsys.readouterr().err
