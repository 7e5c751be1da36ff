"""A small training run for the runtime hub test: shapes at assignment lines, a loop to time, a NaN at one line.

The server test runs it under ``python -m tensorsight doctor`` with TENSORSIGHT_HUB/TOKEN set, so the agent's own
producers (shape observers, phase timers, the NaN sentinel) report to a real language server.
"""

import torch
from torch import nn


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 1)

    def forward(self, x):
        h = torch.relu(self.fc1(x))  # @bp hidden
        return self.fc2(h)


torch.manual_seed(0)
model = TinyNet()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
inputs, targets = torch.randn(64, 8), torch.randn(64, 1)

for step in range(6):  # @bp loop
    optimizer.zero_grad()
    prediction = model(inputs)  # @bp prediction
    denominator = torch.tensor(0.0 if step == 4 else 1.0)
    loss = ((prediction - targets) ** 2).mean() / denominator  # @bp nan
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
