"""Exploding gradients: a deep network whose layers each amplify the signal.

Every layer is initialised three times too large, so activations and gradients grow geometrically with depth and
the gradient norm reaches huge values. TensorSight reports it and suggests clipping with
torch.nn.utils.clip_grad_norm_ (and/or a lower learning rate).
"""

import torch
from torch import nn

torch.manual_seed(0)

inputs = torch.randn(256, 32)
targets = torch.randn(256, 1)
layers: list[nn.Module] = []
for _ in range(8):
    linear = nn.Linear(32, 32)
    with torch.no_grad():
        linear.weight.normal_(0.0, 3.0 / 32**0.5)  # BUG: ~3x the stable scale at every layer
    layers += [linear, nn.ReLU()]
model = nn.Sequential(*layers, nn.Linear(32, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
criterion = nn.MSELoss()

for step in range(20):
    batch = slice((step * 32) % 256, (step * 32) % 256 + 32)
    optimizer.zero_grad()
    loss = criterion(model(inputs[batch]), targets[batch])
    loss.backward()  # no torch.nn.utils.clip_grad_norm_ before the step
    optimizer.step()
print(f"loss {loss.item():.3g}")
