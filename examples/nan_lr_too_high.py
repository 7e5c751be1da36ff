"""NaN from a learning rate that is far too high: the weights grow every step until the arithmetic overflows.

A plain regression MLP, trained with SGD at lr=1.0 on inputs of scale 3: every update overshoots, the weights and the
loss grow geometrically, and after a few steps a value no longer fits in float32. From then on the loss prints `nan`.
Run it under the debugger with "Break on NaN/Inf" (or `python -m tensorsight doctor examples/nan_lr_too_high.py`):
TensorSight names the op where the first Inf appears, its step and its line (marked `# @nan` below).
"""

import torch
from torch import nn

torch.manual_seed(0)

inputs = torch.randn(256, 16) * 3
targets = inputs @ torch.randn(16, 1)
model = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=1.0)  # BUG: far above what this problem tolerates

for step in range(1, 26):
    batch = slice((step * 32) % 256, (step * 32) % 256 + 32)
    prediction = model(inputs[batch])
    error = prediction - targets[batch]
    loss = (error * error).mean()  # @nan
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step:2d}  loss {loss.item():.4g}")
