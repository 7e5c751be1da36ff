"""Debugged by tests/agent/shapes/test_observers_dap.py: a tiny training loop whose shapes the observers report.

The program records the agent's events itself (the test has no hub), so the test can read them at the breakpoint.
"""

import json

import torch
from torch import nn

from tensorsight.agent.runtime import events

SEEN = []
events.subscribe(lambda event: SEEN.append({k: v for k, v in event.items() if k not in ("pid", "time")}))

torch.manual_seed(0)
X = torch.randn(128, 8)
y = torch.randn(128)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(4):
    xb, yb = X[step * 32 : step * 32 + 32], y[step * 32 : step * 32 + 32]
    pred = model(xb)  # @bp pred
    loss = nn.functional.mse_loss(pred, yb)  # @bp loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
SUMMARY = json.dumps(SEEN)
print("done")  # @bp end
