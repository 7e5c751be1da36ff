"""``pip install tensorsight`` alone gives a plain ``python -m debugpy.adapter`` session our summaries, curated
children and the ``tensorsight`` builtin for conditions: no editor, no PYTHONPATH (the environment is a fresh venv
with the wheel installed; the session's interpreter is that venv's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.dap import DebugSession
from support.paths import marked_lines, program
from support.user_envs import UserEnvironment

pytestmark = pytest.mark.subprocess

NO_PATH = {"PYTHONPATH": ""}  # a developer's PYTHONPATH must not hand the debuggee the repository's copy


def test_summaries_children_and_a_nan_condition(user_env: UserEnvironment) -> None:
    path = program("numpy_steps.py")
    line = marked_lines(path)[""]
    with DebugSession.launch(
        path, breakpoints=[(path, line, "tensorsight.nan(roots)")], inject=False, python=user_env.python, env=NO_PATH
    ) as session:
        stop = session.wait_for_stop()
        frame_id = session.top_frame_id(stop)
        local = session.locals(frame_id)
        assert local["step"]["value"] == "2"  # the only step whose roots hold a NaN
        assert local["grid"]["value"] == "f64[3, 4] ndarray μ=5.5 σ=3.61 [0, 11]"
        assert "NaN×1" in local["roots"]["value"]
        assert list(session.children(local["grid"]))[:4] == ["shape", "dtype", "stats", "memory"]
        origin = session.evaluate("tensorsight.__file__", frame_id)["result"]
        assert origin.strip("'").startswith(str(Path(user_env.python).parent.parent)), origin
        assert session.evaluate("[p for p in __import__('sys').path if 'pyhelpers' in p]", frame_id)["result"] == "[]"
        session.continue_(stop["threadId"])
        assert session.wait_for_exit() == 0
    assert "done" in session.stdout()


def test_torch_tensor_summary(torch_env: UserEnvironment, tmp_path: Path) -> None:
    script = tmp_path / "torch_frame.py"
    script.write_text("import torch\n\nweights = torch.arange(6.0).reshape(2, 3)\nprint('ok')  # stop\n")
    with DebugSession.launch(
        str(script),
        breakpoints=[(str(script), 4, "tensorsight.nan(weights) or True")],
        inject=False,
        python=torch_env.python,
        env=NO_PATH,
    ) as session:
        stop = session.wait_for_stop()
        weights = session.locals(session.top_frame_id(stop))["weights"]
        assert weights["value"] == "f32[2, 3] cpu [[0, 1, 2], [3, 4, 5]] μ=2.5 σ=1.87"
        assert {"shape", "dtype", "device", "stats"} <= set(session.children(weights))


def test_another_plugin_distribution_loads_beside_ours(dev_version_env: UserEnvironment, tmp_path: Path) -> None:
    """A second distribution shipping its own pkgutil-style ``pydevd_plugins/extensions`` portion (here ahead of
    site-packages on the path) neither hides ours nor is hidden by it."""
    other = tmp_path / "other"
    (other / "pydevd_plugins" / "extensions").mkdir(parents=True)
    namespace = "import pkgutil\n\n__path__ = pkgutil.extend_path(__path__, __name__)\n"
    (other / "pydevd_plugins" / "__init__.py").write_text(namespace)
    (other / "pydevd_plugins" / "extensions" / "__init__.py").write_text(namespace)
    (other / "pydevd_plugins" / "extensions" / "pydevd_plugin_probe.py").write_text(
        "import builtins\n\nbuiltins.other_plugin_loaded = True\n"
    )
    path = program("numpy_steps.py")
    with DebugSession.launch(
        path,
        breakpoints=[(path, marked_lines(path)[""], "tensorsight.nan(roots)")],
        inject=False,
        python=dev_version_env.python,
        env={"PYTHONPATH": str(other)},
    ) as session:
        frame_id = session.top_frame_id(session.wait_for_stop())
        assert session.evaluate("other_plugin_loaded", frame_id)["result"] == "True"
        assert session.locals(frame_id)["grid"]["value"].startswith("f64[3, 4] ndarray")
