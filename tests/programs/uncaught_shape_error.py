"""Debugged by tests/agent/test_observers.py: an uncaught ``mat1 and mat2`` error in a debug session.

The program prints every finding the agent publishes (the test has no hub), so the test reads the debuggee's output.
"""

import json

import torch
from tensorsight.agent import events
from torch import nn

events.subscribe(
    lambda event: print("FINDING " + json.dumps(event["finding"]), flush=True) if event["type"] == "finding" else None
)

model = nn.Sequential(nn.Linear(20, 8), nn.ReLU(), nn.Linear(16, 2))
model(torch.randn(4, 20))  # @bp fails
