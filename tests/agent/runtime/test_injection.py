"""The agent reaches a real debugpy session through PYTHONPATH alone, with no change to the user's code."""

from support.dap import DebugSession
from support.paths import marked_lines, program


def test_plugin_installs_builtin_in_real_debugpy_session():
    path = program("smoke.py")
    line = marked_lines(path)[""]
    with DebugSession.launch(path, breakpoints=[(path, line, None)]) as session:
        stop = session.wait_for_stop()
        frame_id = session.top_frame_id(stop)
        result = session.evaluate("type(tensorsight).__name__ + ':' + tensorsight.__name__", frame_id)
        assert result["result"] == "'module:tensorsight'"


def test_without_injection_the_builtin_is_absent():
    path = program("smoke.py")
    line = marked_lines(path)[""]
    with DebugSession.launch(path, breakpoints=[(path, line, None)], inject=False) as session:
        stop = session.wait_for_stop()
        frame_id = session.top_frame_id(stop)
        result = session.evaluate("'tensorsight' in dir(__import__('builtins'))", frame_id)
        assert result["result"] == "False"
