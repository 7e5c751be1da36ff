"""The language server and the CLI tools, started exactly as the extension starts them (its own launch function,
``extension/src/common/pythonLaunch.ts``, through ``support.extension_launch``), run nothing from a hostile
workspace: not a ``tensorsight/`` package, a ``json.py``, a ``dataclasses.py``, a ``sitecustomize.py`` or a
``runpy.py``, each of which would leave a marker file if executed. The same workspace does run under the old
``python -m tensorsight.server`` start, so the markers work. Trusted and untrusted: untrusted, the server still gives
the static rules (files read as text) and refuses to open a hub session.
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from lsprotocol import types

from support.extension_launch import extension_launch
from support.lsp import open_and_wait, server_config
from support.paths import PYHELPERS, REPO

BUNDLED_LIBS = pathlib.Path(REPO, "extension", "bundled", "libs")


def interpreters() -> list:
    """This interpreter, and Python 3.10 (no -P there: the bootstrap's own path fix matters) when it is installed;
    the server needs the build's bundled libraries under 3.10 (the test environment's pygls is for this one)."""
    found = [pytest.param(sys.executable, id=f"py{sys.version_info[0]}.{sys.version_info[1]}")]
    older = shutil.which("python3.10")
    if older and sys.version_info[:2] != (3, 10):
        # a version manager's shim runs only once told which version: ask it for the real executable
        for env in (os.environ, {**os.environ, "PYENV_VERSION": "3.10"}):
            probe = subprocess.run(
                [older, "-c", "import sys; print(sys.executable)"], env=env, capture_output=True, text=True, timeout=30
            )
            if probe.returncode == 0 and probe.stdout.strip():
                found.append(pytest.param(probe.stdout.strip(), id="py3.10"))
                break
    return found


RULE_FIXTURE = pathlib.Path(REPO, "tests", "fixtures", "rules", "ts101_gradients_never_cleared.py")
HOSTILE_MODULES = {
    "tensorsight/__init__.py": "tensorsight-package",
    "tensorsight/server/__init__.py": "tensorsight-server",
    "tensorsight/server/__main__.py": "tensorsight-server-main",
    "tensorsight/__main__.py": "tensorsight-main",
    "json.py": "json",
    "dataclasses.py": "dataclasses",
    "sitecustomize.py": "sitecustomize",
    "runpy.py": "runpy",
}


@pytest.fixture
def hostile(tmp_path: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """(workspace, markers folder): every planted module writes markers/<name> when it runs, then breaks the import."""
    workspace, markers = tmp_path / "workspace", tmp_path / "markers"
    markers.mkdir()
    for relative, marker in HOSTILE_MODULES.items():
        file = workspace / relative
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(
            f"open({str(markers / marker)!r}, 'w').close()\n"
            "raise ImportError('a workspace module ran in TensorSight')\n"
        )
    shutil.copy(RULE_FIXTURE, workspace / "train.py")
    (workspace / "benign.py").write_text("print('the user script ran')\n")
    return workspace, markers


def ran(markers: pathlib.Path) -> list[str]:
    return sorted(path.name for path in markers.iterdir())


def test_the_planted_modules_do_run_under_the_old_start(hostile):
    workspace, markers = hostile
    env = {**os.environ, "PYTHONPATH": PYHELPERS}
    done = subprocess.run(
        [sys.executable, "-m", "tensorsight.server"],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "tensorsight-package" in ran(markers)


@pytest.mark.asyncio(loop_scope="function")
@pytest.mark.timeout(120)
@pytest.mark.parametrize("trusted", [True, False], ids=["trusted", "untrusted"])
@pytest.mark.parametrize("python", interpreters())
async def test_the_server_starts_from_a_hostile_workspace_and_runs_none_of_it(hostile, trusted, python):
    workspace, markers = hostile
    if python != sys.executable and not (BUNDLED_LIBS / "pygls").is_dir():
        pytest.skip("Python 3.10 runs the server from the build's bundled libraries: run `npm run build` first")
    # The user's own PYTHONPATH names the workspace too (and "."): the isolated server must ignore both.
    config = server_config(extra_env={"PYTHONPATH": os.pathsep.join([str(workspace), "."])}, python=python)
    assert config.cwd == PYHELPERS and "-I" in config.server_command
    client = await config.start()
    try:
        await client.initialize_session(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                root_uri=workspace.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="hostile")],
                initialization_options={"trusted": trusted},
            )
        )
        uri = await open_and_wait(client, workspace / "train.py")
        assert [str(d.code) for d in client.diagnostics[uri]] == ["TS101"]  # static rules: the file read as text
        start = client.protocol.send_request_async("tensorsight/startSession", {"sessionId": "s"})
        if trusted:
            assert (await start).address.startswith("127.0.0.1:")
        else:
            with pytest.raises(Exception, match="not trusted"):
                await start
        await client.shutdown_session()
    finally:
        await client.stop()
    assert ran(markers) == []


@pytest.mark.asyncio(loop_scope="function")
@pytest.mark.timeout(240)
@pytest.mark.parametrize("python", interpreters())
async def test_a_cli_tool_runs_the_users_script_but_nothing_else_from_the_workspace(hostile, python):
    workspace, markers = hostile
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORSIGHT_")}
    env["PYTHONPATH"] = os.pathsep.join([str(workspace), "."])  # the user's: kept, but behind the standard library
    target = str(workspace / "benign.py")
    launch = extension_launch("tool", env, python=python, tool="doctor", target=target, cwd=str(workspace))
    assert launch["cwd"] == PYHELPERS and launch["args"][0] == "-E"  # no PYTHONPATH; the user's site stays
    process = await asyncio.create_subprocess_exec(
        launch["command"],
        *launch["args"],
        cwd=launch["cwd"],
        env=launch["env"],
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 200)
    assert process.returncode == 0, stderr.decode()
    assert "findings" in json.loads(stdout)
    assert "the user script ran" in stderr.decode() + stdout.decode()
    assert ran(markers) == []


def test_the_bootstrap_drops_what_python_3_10_still_prepends(tmp_path):
    """Python 3.10 has no -P: under -I it still puts the script's folder (or, for -c, the working directory) first."""
    from tensorsight.launch import isolated_path, parse

    ours, stdlib = tmp_path / "ours", tmp_path / "stdlib"
    ours.mkdir(), stdlib.mkdir()
    own = os.path.join(PYHELPERS, "tensorsight")
    current = [own, "", ".", str(stdlib), str(ours)]
    search = [str(ours), str(tmp_path / "missing"), str(ours)]
    assert isolated_path(current, search, own, ["."]) == [str(ours), str(stdlib), "."]
    launch = parse(["--path", "a", "--after", "b", "--chdir", "w", "-m", "pkg.mod", "-x", "--path"])
    assert launch == (["a"], ["b"], "w", "pkg.mod", ["-x", "--path"])
    with pytest.raises(SystemExit):
        parse(["--bogus", "-m", "x"])
