"""Test program: a forward with side effects outside its module (a global counter, a module-level log) is not
replayed (tests/agent/sentinel/test_sentinel_doctor.py): a second run would change them. The sentinel stops at the model
call instead (``# @call``), says why, and the program ends in the same state as without TensorSight."""

import json
import sys

import torch
from torch import nn

CALLS = 0
LOG = []


class Logged(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, gain: float) -> torch.Tensor:
        global CALLS
        CALLS += 1
        LOG.append(CALLS)
        return torch.sqrt(self.fc(x).abs() * gain)


torch.manual_seed(0)
model = Logged()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(1, 4):
    out = model(torch.randn(8, 4), 1.0 if step != 2 else -1.0)  # @call
    loss = out.mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

state = {"calls": CALLS, "log": LOG, "next_random": torch.rand(3).tolist()}
with open(sys.argv[1], "w", encoding="utf-8") as handle:
    json.dump(state, handle)
