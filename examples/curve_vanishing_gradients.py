"""Vanishing gradients: a deep stack of sigmoid layers.

The sigmoid's slope is at most 0.25, so the gradient shrinks layer after layer on its way back: the first layers
receive almost nothing and barely learn. TensorSight compares the gradient norm of the first and last layers and
suggests ReLU, residual connections, normalisation or a better initialisation.
"""

import torch
from torch import nn

torch.manual_seed(0)

inputs = torch.randn(256, 16)
targets = (inputs.sum(dim=1) > 0).long()
layers: list[nn.Module] = []
width = 16
for _ in range(12):
    layers += [nn.Linear(width, 32), nn.Sigmoid()]  # BUG: 12 saturating layers, no normalisation
    width = 32
model = nn.Sequential(*layers, nn.Linear(width, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()

for step in range(30):
    batch = slice((step * 32) % 256, (step * 32) % 256 + 32)
    optimizer.zero_grad()
    loss = criterion(model(inputs[batch]), targets[batch])
    loss.backward()
    optimizer.step()
print(f"first layer grad norm {model[0].weight.grad.norm():.2e}, last {model[-1].weight.grad.norm():.2e}")
