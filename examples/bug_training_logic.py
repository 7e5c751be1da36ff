"""Bug class: training logic. Gradients are never zeroed, and evaluation runs in training mode.

``optimizer.zero_grad()`` is missing, so every ``backward()`` adds to the gradients of all previous steps: the
effective step grows with time and training becomes erratic. The validation pass also forgets ``model.eval()``
(dropout stays on) and ``torch.no_grad()`` (an autograd graph is built for nothing). No error is raised.

    python -m tensorsight doctor examples/bug_training_logic.py

The static rules flag the loop (``training-logic`` findings); the runtime checks of shapes, data and devices stay
silent because those are fine here.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
inputs = torch.randn(1024, 16)
labels = (inputs[:, 0] > 0).long()
train_loader = DataLoader(TensorDataset(inputs[:896], labels[:896]), batch_size=64, shuffle=True)
val_inputs, val_labels = inputs[896:], labels[896:]

model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    for xb, yb in train_loader:
        loss = criterion(model(xb), yb)
        loss.backward()  # BUG: no optimizer.zero_grad() in this loop
        optimizer.step()
    val_loss = criterion(model(val_inputs), val_labels)  # BUG: no model.eval() / torch.no_grad()
    print(f"epoch {epoch}: train {loss.item():.3f} val {val_loss.item():.3f}")
