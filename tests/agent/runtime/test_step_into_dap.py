"""Step Into in a "Debug Training" session: with the launch defaults the extension gives it
(``core.protocol.DEBUG_TRAINING_DEFAULTS``: ``justMyCode`` on), Step Into on ``model(x)`` lands on the first line of
the user's ``forward``, past torch's ``Module.__call__`` and TensorSight's hooks (all armed: sentinel, shapes,
measurement); with ``justMyCode`` off (the ``tensorsight.justMyCode`` setting) it lands in torch's module.py."""

from __future__ import annotations

import os

from support.dap import DebugSession
from support.paths import marked_lines, program
from tensorsight.core.protocol import DEBUG_TRAINING_DEFAULTS

PATH = program(os.path.join("stepping", "step_into_model.py"))
OPTIONS = {"breakOnNonFinite": True}


def step_into_from_the_call(just_my_code: bool) -> dict:
    lines = marked_lines(PATH)
    launch = {**DEBUG_TRAINING_DEFAULTS, "justMyCode": just_my_code}
    with DebugSession.launch(
        PATH, breakpoints=[(PATH, lines["call"], None)], options=OPTIONS, extra_launch=launch, timeout=90
    ) as session:
        stop = session.wait_for_stop(timeout=120)
        assert session.top_frame(stop)["line"] == lines["call"]
        session.request("stepIn", {"threadId": stop["threadId"]})
        stepped = session.wait_for_stop(timeout=120)
        assert stepped["reason"] == "step"
        return session.top_frame(stepped)


def test_step_into_the_model_call_lands_in_the_users_forward():
    assert DEBUG_TRAINING_DEFAULTS["justMyCode"] is True
    frame = step_into_from_the_call(DEBUG_TRAINING_DEFAULTS["justMyCode"])
    assert frame["source"]["path"] == PATH, frame
    assert (frame["name"], frame["line"]) == ("forward", marked_lines(PATH)["forward"])


def test_with_just_my_code_off_step_into_enters_torch():
    frame = step_into_from_the_call(False)
    assert frame["source"]["path"].endswith(os.path.join("torch", "nn", "modules", "module.py")), frame
