"""A classic silent memory leak: the loss is accumulated as a tensor, not as a number.

`total_loss += loss` chains every step's loss into one autograd graph that is never freed, so memory grows with
every step (on a GPU this ends in an out-of-memory error hours later). The fix is `total_loss += loss.item()`.
TensorSight reports a `memory` finding at that line.
"""

import torch
from torch import nn

torch.manual_seed(0)

inputs = torch.randn(256, 20)
targets = torch.randn(256, 1)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = nn.MSELoss()

total_loss = 0
for step in range(30):
    batch = slice((step * 32) % 256, (step * 32) % 256 + 32)
    optimizer.zero_grad()
    loss = loss_fn(model(inputs[batch]), targets[batch])
    loss.backward()
    optimizer.step()
    total_loss += loss  # BUG: keeps the graph of every step alive; use loss.item()
print(f"mean loss {total_loss.item() / 30:.4f}")
