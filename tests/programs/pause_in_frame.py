"""Test program for tensorsight.agent.debugger.pause (tests/agent/debugger/test_pause_dap.py): a helper stops the
debugger in the frame of its caller, the way the NaN sentinel stops in the user's frame from inside its hooks. No
torch needed."""

import sys

from tensorsight.agent.debugger import pause


def stop_in_caller(title, line=None):
    return pause.stop_in_frame(sys._getframe(1), title, f"{title}: a reason for the editor", {"(extra)": [1, 2]}, line)


def train():
    total = 10
    first = stop_in_caller("Stopped here")  # @bp stop
    total += 1  # @bp next
    shown = sys._getframe().f_lineno  # @bp shown
    second = stop_in_caller("Shown on an earlier line", line=shown)
    return first, second, total


print("results", train())
