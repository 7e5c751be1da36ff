"""A training run whose first steps happen before any hub listens (tests/server/test_hub_after_agent.py).

Three measured steps with shapes at assignment lines, then it waits (bounded) for the file named by its first
argument, which the test creates once the hub is reachable, then two more steps.
"""

import os
import sys
import time

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
inputs, targets = torch.randn(64, 8), torch.randn(64, 1)


def train_step() -> float:
    optimizer.zero_grad()
    prediction = model(inputs)
    loss = ((prediction - targets) ** 2).mean()
    loss.backward()
    optimizer.step()
    return loss.item()


for step in range(3):
    print(f"early step {step}: loss {train_step():.4f}", flush=True)
print("early steps done", flush=True)
deadline = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.05)
for step in range(3, 5):
    print(f"late step {step}: loss {train_step():.4f}", flush=True)
