"""Debugged by tests/agent/measurement/test_phase_clock.py: a loop of quick steps that the test holds at two
breakpoints (one in the loop body, one inside the model's forward) for seconds each. Each step runs inside a
``tensorsight.Timer`` block, whose measurements must leave those seconds out as the phase clock does.

The program records the agent's ``phases`` and ``timer`` events itself (the test has no hub) and writes them, one
JSON object a line, to the file named by the PHASES_FILE environment variable.
"""

import json
import os

import torch
from torch import nn

import tensorsight
from tensorsight.agent.runtime import events

SEEN = []
events.subscribe(lambda event: SEEN.append(event) if event.get("type") in ("phases", "timer") else None)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 1)

    def forward(self, x):
        return self.fc(x)  # @bp forward


torch.manual_seed(0)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
X, y = torch.randn(32, 8), torch.randn(32, 1)
timer = tensorsight.Timer("step", verbose=False)
for step in range(12):  # noqa: B007 - the breakpoint conditions read it
    with timer:
        optimizer.zero_grad()  # @bp loop
        loss = nn.functional.mse_loss(model(X), y)
        loss.backward()
        optimizer.step()
with open(os.environ["PHASES_FILE"], "w") as out:
    out.writelines(json.dumps(event) + "\n" for event in SEEN)
