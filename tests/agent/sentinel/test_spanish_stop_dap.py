"""The first-NaN stop in a real debugpy session for a Spanish editor: the debuggee's environment carries
TENSORSIGHT_LOCALE=es (the extension sets it from vscode.env.language), so the stop's title and reason, the
exceptionInfo and the Debug Console lines are Spanish; a misused condition predicate says why in Spanish too."""

from support.dap import DebugSession
from support.paths import example, marked_lines
from tensorsight.core import protocol


def test_the_first_nan_stop_and_the_console_speak_spanish():
    path = example("nan_log_zero.py")
    env = {protocol.ENV_LOCALE: "es"}
    with DebugSession.launch(path, options={"breakOnNonFinite": True}, env=env, timeout=90) as session:
        stop = session.wait_for_stop(timeout=120)
        assert stop["reason"] == "exception" and stop["text"] == "Inf nace aquí"
        description = stop["description"]
        assert description.startswith("torch.log produjo") and "a partir de entradas finitas" in description
        assert "— propagación, en nan_log_zero.py:" in description and "(paso " in description
        frame = session.top_frame(stop)
        assert frame["line"] == marked_lines(path, "@nan")[""]
        info = session.request("exceptionInfo", {"threadId": stop["threadId"]})
        assert info["exceptionId"] == "Inf nace aquí" and info["description"] == description
        session.wait_for_output("[tensorsight] Inf nace aquí: torch.log produjo")
        answer = session.evaluate("tensorsight.spike(1.0, factor=-1)", frame["id"])
        assert answer["result"] == "False"
        session.continue_(stop["threadId"])
        assert session.wait_for_exit(timeout=120) == 0
        assert "factor debe ser un número positivo; se recibió -1; la condición es False" in session.stdout()
