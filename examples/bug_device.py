"""Bug class: devices. The whole dataset is moved to the device at every training step.

Full-batch training keeps ``X`` and ``y`` on the CPU and calls ``.to(device)`` inside the loop: on a GPU each step
copies the full dataset host-to-device again, and the step time is dominated by the copy. On a CPU-only machine the
same line is a no-op, so the script is fast there and the bug only shows on the training server.

    python -m tensorsight doctor examples/bug_device.py

sees the same tensors moved in consecutive steps and reports a ``device`` finding at that line, saying whether the
move copies here (on a GPU: how many bytes per step) or is a no-op on this machine. Fix: move ``X`` and ``y`` once,
before the loop. (A tensor on another device than the layer it feeds is reported too, but torch raises on that
right away: see ``tensorsight.check_devices``.)
"""

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
X = torch.randn(4096, 32)
y = (X[:, :4].sum(dim=1) > 0).long()

model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
loss_fn = nn.CrossEntropyLoss()

for step in range(20):
    inputs, targets = X.to(device), y.to(device)  # BUG: copies the whole dataset at every step
    loss = loss_fn(model(inputs), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"final loss {loss.item():.3f}")
