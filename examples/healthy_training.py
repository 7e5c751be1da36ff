"""A healthy training run: the loss falls, validation follows it, gradients stay moderate.

TensorSight reports no `dynamics` warning on it. Run it under the doctor to see the measurement quiet:
    python -m tensorsight doctor examples/healthy_training.py
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)

# One noisy Gaussian blob per class, overlapping: learnable, not trivially separable.
features, classes = 32, 4
centres = torch.randn(classes, features) * 0.3
labels = torch.arange(3200) % classes
inputs = centres[labels] + torch.randn(3200, features)
train_set = TensorDataset(inputs[:2560], labels[:2560])
val_set = TensorDataset(inputs[2560:], labels[2560:])
train_loader = DataLoader(train_set, batch_size=64, shuffle=True)
val_loader = DataLoader(val_set, batch_size=256)

model = nn.Sequential(nn.Linear(features, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, classes))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(6):
    model.train()
    running = 0.0
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        running += loss.item()
    model.eval()
    with torch.no_grad():
        val_loss = sum(criterion(model(x), y).item() for x, y in val_loader) / len(val_loader)
    print(f"epoch {epoch}: train {running / len(train_loader):.4f}  val {val_loss:.4f}")
