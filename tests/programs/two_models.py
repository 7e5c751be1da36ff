"""Run by tests/cli/test_shape_report.py through ``python -m tensorsight shapes``: which model gets mapped, and when.

A small auxiliary layer runs first; the autoencoder is the training model. The script prints after its first
optimizer step, which the shapes command must never reach.
"""

import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4))

    def forward(self, x):
        return self.layers(x)


class AutoEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = Encoder()
        self.decoder = nn.Linear(4, 16)

    def forward(self, x):
        code = self.encoder(x)
        return self.decoder(code)


torch.manual_seed(0)
aux = nn.Linear(3, 3)
aux(torch.randn(2, 3))
model = AutoEncoder()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.randn(32, 16)
for _ in range(3):
    loss = ((model(data) - data) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print("SCRIPT KEPT RUNNING AFTER A STEP")
