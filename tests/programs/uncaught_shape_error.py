"""Debugged by tests/agent/shapes/test_observers_dap.py: an uncaught ``mat1 and mat2`` error in a debug session.

The program appends every finding the agent publishes to the file named by FINDINGS_FILE (the test has no hub).
"""

import json
import os

import torch
from torch import nn

from tensorsight.agent.runtime import events


def keep(event: dict) -> None:
    if event["type"] == "finding":
        with open(os.environ["FINDINGS_FILE"], "a", encoding="utf-8") as handle:
            handle.write(json.dumps(event["finding"]) + "\n")


events.subscribe(keep)

model = nn.Sequential(nn.Linear(20, 8), nn.ReLU(), nn.Linear(16, 2))
model(torch.randn(4, 20))  # @bp fails
