"""Stepping through a training step never lands in TensorSight's code (``debugger.pause.hide_agent_files``): in a
real debugpy session with the plain F5 options (the agent's module hooks, the NaN sentinel's modes and backward
hooks armed), Step Into and Step Over from the program's lines reach only the program's and torch's lines, and the
Call Stack at every stop lists no TensorSight frame. With ``justMyCode`` on (VS Code's default for a plain Python
launch; our package lies outside site-packages, so pydevd would count it as the user's) Step Into from
``model(inputs)`` goes straight into the program's ``forward``; with it off (a "Debug Training" launch) Step Into
walks torch's module call, whose hook calls are ours, and never enters one. Runs under 3.11 (``sys.settrace``) and,
in scripts/test.sh, under 3.12 and 3.13 (``sys.monitoring``).
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from support.dap import DebugSession
from support.paths import marked_lines
from tensorsight.agent.runtime.user_code import is_agent_file

pytest.importorskip("torch")

PROGRAM = str(pathlib.Path(__file__).parent / "programs" / "stepping.py")
LINES = marked_lines(PROGRAM)
OPTIONS = {"breakOnNonFinite": True}
SLOW = 240.0
MAX_STEPS = 400  # Step Into requests through torch's module call before the program's forward must be reached


def stop_place(session: DebugSession, stop: dict[str, Any]) -> tuple[str, int, list[str]]:
    """The top frame's file and line, and every TensorSight file in the Call Stack."""
    frames = session.stack(stop["threadId"])
    paths = [frame.get("source", {}).get("path", "") for frame in frames]
    return paths[0], int(frames[0]["line"]), [path for path in paths if is_agent_file(path)]


def step(session: DebugSession, stop: dict[str, Any], command: str) -> dict[str, Any]:
    session.request(command, {"threadId": stop["threadId"]})
    return session.wait_for_stop(timeout=60)


def stopped_at_the_call_of_step_two(session: DebugSession) -> dict[str, Any]:
    """The program held at ``model(inputs)`` of its second step (the agent's hooks have all run once)."""
    stop = session.wait_for_stop(timeout=SLOW)
    path, line, ours = stop_place(session, stop)
    assert (path, line, ours) == (PROGRAM, LINES["call"], [])
    session.continue_(stop["threadId"])
    stop = session.wait_for_stop(timeout=SLOW)
    assert stop_place(session, stop)[:2] == (PROGRAM, LINES["call"])
    return stop


@pytest.mark.timeout(300)
def test_with_just_my_code_step_into_goes_from_the_call_to_forward_and_steps_never_enter_tensorsight():
    breakpoints = [(PROGRAM, LINES["call"], "step < 2")]
    with DebugSession.launch(
        PROGRAM, breakpoints=breakpoints, options=OPTIONS, extra_launch={"justMyCode": True}, timeout=SLOW
    ) as session:
        stop = stopped_at_the_call_of_step_two(session)
        stop = step(session, stop, "stepIn")
        assert stop_place(session, stop) == (PROGRAM, LINES["forward"], [])
        # Step Over / Into to the end of the step and beyond: every line the program's, none of ours on the stack
        seen = []
        for command in ["next", "next", "stepIn", "stepIn", "next", "stepIn", "next", "next"]:
            stop = step(session, stop, command)
            path, line, ours = stop_place(session, stop)
            assert path == PROGRAM and ours == [], (command, path, line, ours)
            seen.append(line)
        assert LINES["call"] + 2 in seen, "backward's line was reached by stepping"  # loss.backward()
        session.continue_(stop["threadId"])
        assert session.wait_for_exit(timeout=SLOW) == 0
    assert "final loss" in session.stdout()


@pytest.mark.timeout(300)
def test_without_just_my_code_step_into_walks_torchs_module_call_and_never_enters_a_tensorsight_hook():
    breakpoints = [(PROGRAM, LINES["call"], "step < 2")]
    with DebugSession.launch(PROGRAM, breakpoints=breakpoints, options=OPTIONS, timeout=SLOW) as session:
        stop = stopped_at_the_call_of_step_two(session)
        files = set()
        for _ in range(MAX_STEPS):
            stop = step(session, stop, "stepIn")
            path, line, ours = stop_place(session, stop)
            assert not is_agent_file(path) and ours == [], f"stepped into TensorSight: {path}:{line} {ours}"
            files.add(pathlib.Path(path).name)
            if (path, line) == (PROGRAM, LINES["forward"]):
                break
        else:
            pytest.fail(f"forward not reached in {MAX_STEPS} Step Into; files stepped through: {sorted(files)}")
        assert "module.py" in files, "Step Into walked torch's Module.__call__ (where the agent's hooks are called)"
        session.continue_(stop["threadId"])
        assert session.wait_for_exit(timeout=SLOW) == 0
