"""The first-NaN stop does not depend on which steps the sentinel's budget observes: a training script with a
hand-written cross-entropy (tests/programs/hand_loss: argparse, Adam, StepLR, the loss in its own module or inline in
the loop) makes its first -Inf in torch.log past the always-observed first steps, and every fresh Debug Training
session stops on that line, in the user's code, then runs on to the same output as a plain run."""

import re
import subprocess

import pytest

from support.dap import DebugSession
from support.paths import PYTHON, marked_lines, program

HAND_LOSS = program("hand_loss/train.py")
LOSSES = program("hand_loss/losses.py")
SESSIONS = 2


def plain_output(*args):
    return subprocess.run([PYTHON, HAND_LOSS, *args], capture_output=True, text=True, check=True, timeout=120).stdout


@pytest.mark.parametrize(
    ("args", "path", "marker", "function"),
    [((), LOSSES, "", "soft_cross_entropy"), (("--inline",), HAND_LOSS, "inline", "main")],
    ids=["loss in its own module", "loss inline in the loop"],
)
def test_every_session_stops_on_the_torch_log_line(args, path, marker, function):
    line = marked_lines(path, "@nan")[marker]
    expected = plain_output(*args)
    for _ in range(SESSIONS):
        with DebugSession.launch(HAND_LOSS, args=args, options={"breakOnNonFinite": True}, timeout=90) as session:
            stop = session.wait_for_stop(timeout=180)
            assert stop["reason"] == "exception" and stop["text"] == "Inf born here"
            assert "torch.log made 1 -Inf" in stop["description"] and "learning rate" not in stop["description"]
            frame = session.top_frame(stop)
            assert (frame["source"]["path"], frame["line"], frame["name"]) == (path, line, function)
            paths = [f["source"].get("path", "") for f in session.stack(stop["threadId"])]
            assert not any("/tensorsight/" in p for p in paths), "TensorSight's own frames are hidden"
            record = session.locals(frame["id"])["(nonfinite)"]
            assert "Inf born here" in record["value"]
            assert session.evaluate("tensorsight.last_nonfinite().line", frame["id"])["result"] == str(line)
            session.continue_(stop["threadId"])
            assert session.wait_for_exit(timeout=120) == 0
            printed = re.findall(r"(?:step \d+ loss \S+ recall \S+|trained \d+ steps)", session.stdout())
            assert printed == expected.splitlines()
