"""The first-NaN stop on the programs where real NaN bugs live (tests/programs/first_nan, written the way beginner
and public code is written): a hand-written logistic regression at module level, a ``while True:`` loop that exits on
``torch.isnan(loss)`` before any backward(), a loss class in its own module checked before training, a Transformer
whose hand-written masked softmax meets a fully padded sequence, a custom ``autograd.Function`` whose backward
divides by zero, and sqrt's gradient at 0 in the very first step.

Each fresh Debug Training session stops on the ``# @nan`` line, in the frame that ran it, with the record in
Variables; Continue then lets the program end as it would have. The fixed version of each (``--fixed``) never
stops. The doctor names the same line (``tests/cli/test_first_nan_families.py``)."""

import os
import subprocess

import pytest

from support.dap import DebugSession
from support.paths import PYTHON, marked_lines, program

# program, file with the marker, function that runs the marked line
FAMILIES = {
    "module-level logistic regression": ("logistic_module_level.py", "logistic_module_level.py", "<module>"),
    "while True with an isnan exit": ("softmax_while_isnan.py", "softmax_while_isnan.py", "<module>"),
    "loss class in its own module": ("library_loss/train.py", "library_loss/losses.py", "dice"),
    "masked softmax over a padded row": ("masked_attention.py", "masked_attention.py", "forward"),
    "custom autograd.Function backward": ("custom_function.py", "custom_function.py", "backward"),
    "sqrt backward in the first step": ("backward_first_step.py", "backward_first_step.py", "forward"),
}


def _plain_exit_code(path, *args):
    return subprocess.run(
        [PYTHON, path, *args], cwd=os.path.dirname(path), capture_output=True, timeout=180, check=False
    ).returncode


@pytest.mark.parametrize("family", list(FAMILIES), ids=list(FAMILIES))
def test_the_session_stops_on_the_line_that_made_it(family):
    script, marked, function = FAMILIES[family]
    path, marked_path = program(f"first_nan/{script}"), program(f"first_nan/{marked}")
    line = marked_lines(marked_path, "@nan")[""]
    with DebugSession.launch(
        path, options={"breakOnNonFinite": True}, timeout=90, extra_launch={"justMyCode": True}
    ) as session:
        stop = session.wait_for_stop(timeout=180)
        assert stop["reason"] == "exception" and stop["text"] in ("NaN born here", "Inf born here"), stop
        frame = session.top_frame(stop)
        assert (frame["source"]["path"], frame["line"], frame["name"]) == (marked_path, line, function), stop
        assert "learning rate" not in stop["description"]
        record = session.locals(frame["id"])["(nonfinite)"]
        assert "born here" in record["value"]
        assert session.evaluate("tensorsight.last_nonfinite().line", frame["id"])["result"] == str(line)
        session.continue_(stop["threadId"])
        assert session.wait_for_exit(timeout=180) == _plain_exit_code(path)


@pytest.mark.parametrize("family", list(FAMILIES), ids=list(FAMILIES))
def test_the_fixed_program_never_stops(family):
    path = program(f"first_nan/{FAMILIES[family][0]}")
    with DebugSession.launch(
        path, args=("--fixed",), options={"breakOnNonFinite": True}, timeout=90, extra_launch={"justMyCode": True}
    ) as session:
        assert session.wait_for_stop_or_exit(timeout=180) is None, session.stdout()
        assert session.wait_for_exit(timeout=60) == 0
