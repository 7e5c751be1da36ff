"""The learning rate is too high: each update overshoots and the loss climbs instead of falling.

TensorSight diagnoses a diverging training loss (a `dynamics` finding at the optimizer line, suggesting a lower
learning rate).
"""

import torch
from torch import nn

torch.manual_seed(0)

inputs = torch.randn(512, 10) * 3
targets = inputs @ torch.randn(10, 1)
model = nn.Linear(10, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.12)  # BUG: above 2/curvature, every step overshoots
loss_fn = nn.MSELoss()

for step in range(40):
    batch = slice((step * 64) % 512, (step * 64) % 512 + 64)
    optimizer.zero_grad()
    loss = loss_fn(model(inputs[batch]), targets[batch])
    loss.backward()
    optimizer.step()
print(f"final loss {loss.item():.4g}")
