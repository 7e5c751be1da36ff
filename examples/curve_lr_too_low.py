"""The learning rate is far too low: the loss barely moves, the run looks "stable" and learns nothing.

TensorSight diagnoses a training loss that is not decreasing (a `dynamics` finding at the optimizer line).
"""

import torch
from torch import nn

torch.manual_seed(0)

inputs = torch.randn(512, 10)
targets = inputs @ torch.randn(10, 1) + 0.1 * torch.randn(512, 1)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)  # BUG: ~1e-2 would learn
loss_fn = nn.MSELoss()

for step in range(120):
    batch = slice((step * 64) % 512, (step * 64) % 512 + 64)
    optimizer.zero_grad()
    loss = loss_fn(model(inputs[batch]), targets[batch])
    loss.backward()
    optimizer.step()
print(f"final loss {loss.item():.4f}")
