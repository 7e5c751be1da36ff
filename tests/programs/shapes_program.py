"""Run by tests/agent/shapes/test_observers_dap.py under tests/programs/agent_events.py: lines whose shapes it sees.

``# @line NAME`` marks the lines the test looks up. The loop runs 12 optimizer steps; lines that run only at one
step show which steps the observers sample.
"""

import torch
from torch import nn

torch.manual_seed(0)
X = torch.randn(512, 8)  # @line X
y = torch.randn(512)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)  # @line init
        self.fc2 = nn.Linear(16, 1)

    def forward(self, x):
        h = torch.relu(self.fc1(x))  # @line hidden
        return self.fc2(h)


model = Net()
meta_model = nn.Linear(8, 2, device="meta")  # weights never materialised: no data, another "device"
try:
    meta_model(X[:4])  # @line meta
except RuntimeError:
    pass
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(12):
    xb, yb = X[step * 32 : step * 32 + 32], y[step * 32 : step * 32 + 32]  # @line batch
    pred = model(xb)  # @line pred
    loss = ((pred.squeeze(-1) - yb) ** 2).mean()  # @line loss
    if step == 5:
        unsampled = xb * 3  # @line unsampled
    if step == 10:
        resampled = xb[:, :2] * 2  # @line resampled
    diff = pred - yb  # @line broadcast
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()  # @line step
