"""Bug class: shapes. A prediction of shape [N, 1] is compared with a target of shape [N].

The model ends in ``nn.Linear(32, 1)``, so it predicts ``[64, 1]``; the targets are ``[64]``. ``nn.MSELoss`` (and
the hand-written ``(pred - y) ** 2``) broadcast the two to ``[64, 64]`` and average over every prediction/target
pair. Nothing fails: the loss goes down a little and the model learns the mean of the targets. Torch only prints a
UserWarning that scrolls away.

    python -m tensorsight doctor examples/bug_shapes.py

reports a ``shape`` finding at the loss line (and one at the hand-written error line). Fix: ``pred.squeeze(-1)``.
"""

import torch
from torch import nn

torch.manual_seed(0)
X = torch.randn(512, 8)
y = X @ torch.randn(8) + 0.1 * torch.randn(512)  # targets: shape [512]

model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))  # predictions: shape [N, 1]
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
loss_fn = nn.MSELoss()

for epoch in range(3):
    for start in range(0, len(X), 64):
        xb, yb = X[start : start + 64], y[start : start + 64]
        pred = model(xb)
        loss = loss_fn(pred, yb)  # BUG: [64, 1] against [64] broadcasts to [64, 64]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        error = ((model(X) - y) ** 2).mean()  # BUG: the same broadcast, written by hand (evaluation pass)
    print(f"epoch {epoch}: loss {loss.item():.3f}, full-data error {error.item():.3f}")
