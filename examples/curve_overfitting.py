"""Overfitting: a large network memorises a small, noisy training set.

The training loss keeps falling while the validation loss (computed in eval mode under torch.no_grad()) turns
around and rises. TensorSight diagnoses it from the two curves and suggests early stopping or regularisation.
"""

import torch
from torch import nn

torch.manual_seed(0)

features = 20
true_weights = torch.randn(features, 1)


def make_split(count: int, noise: float):
    x = torch.randn(count, features)
    return x, x @ true_weights + noise * torch.randn(count, 1)


train_x, train_y = make_split(64, noise=3.0)  # few, noisy samples: easy to memorise
val_x, val_y = make_split(256, noise=3.0)

model = nn.Sequential(nn.Linear(features, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
criterion = nn.MSELoss()

for epoch in range(100):
    model.train()
    optimizer.zero_grad()
    loss = criterion(model(train_x), train_y)
    loss.backward()
    optimizer.step()
    if epoch % 5 == 4:
        model.eval()
        with torch.no_grad():
            val_loss = criterion(model(val_x), val_y)
        print(f"epoch {epoch}: train {loss.item():.3f}  val {val_loss.item():.3f}")
