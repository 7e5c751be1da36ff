"""Bug class: data. Test samples that the model trained on, and a feature that is the label.

Two classic leaks, both silent: the test score looks great and means nothing.
- The splits are cut by hand with overlapping slices, so samples 700-799 are in both train and test (same ids,
  same content).
- Column 5 was computed from the label (think of a "was_approved" column when predicting approval).

    python -m tensorsight doctor examples/bug_leakage.py

finds the split variables by name when training starts and reports ``leakage`` findings where the splits are built:
the id overlap and the duplicated samples at the test split's line, the label copy at the training split's line.
"""

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
rng = np.random.default_rng(0)
n = 1000
ids = np.arange(n)
X = rng.standard_normal((n, 6)).astype(np.float32)
y = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
X[:, 5] = y  # a feature computed from the label

X_train, y_train, train_ids = X[:800], y[:800], ids[:800]  # BUG: column 5 is the label
X_test, y_test, test_ids = X[700:], y[700:], ids[700:]  # BUG: rows 700-799 are also in the training split

train_loader = DataLoader(TensorDataset(torch.from_numpy(X_train), torch.from_numpy(y_train)), batch_size=64)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

for epoch in range(2):
    for xb, yb in train_loader:
        loss = nn.functional.cross_entropy(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

with torch.no_grad():
    accuracy = (model(torch.from_numpy(X_test)).argmax(1).numpy() == y_test).mean()
print(f"test accuracy {accuracy:.3f} (too good to be true)")
