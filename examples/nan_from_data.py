"""NaN that comes in with the data: one field of the table is missing, and nothing checks for it.

The table is read the way many projects read CSV files: `np.genfromtxt` turns an empty field into `nan` without a
word. The dataset converts each row to a tensor when the DataLoader asks for it, so the NaN enters torch at step 3,
in the batch that holds row 21; the loss is NaN from that step on and the weights follow.

TensorSight stops where the NaN enters torch, not where the loss finally shows it: the conversion in `__getitem__`
marked `# @nan`, phase "data", with the row in Variables.
"""

import io

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

rng = np.random.default_rng(0)
rows = rng.normal(size=(64, 5)).round(3)
lines = [",".join(str(v) for v in row) for row in rows]
lines[21] = lines[21].replace(str(rows[21, 2]), "", 1)  # BUG: a missing measurement, an empty CSV field
table = np.genfromtxt(io.StringIO("\n".join(lines)), delimiter=",")


class Table(Dataset):
    def __init__(self, table: np.ndarray) -> None:
        self.table = table

    def __len__(self) -> int:
        return len(self.table)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        row = torch.as_tensor(self.table[index], dtype=torch.float32)  # @nan
        return row[:4], row[4:]


torch.manual_seed(0)
loader = DataLoader(Table(table), batch_size=8, shuffle=False)
model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

for step, (features, target) in enumerate(loader, start=1):
    loss = nn.functional.mse_loss(model(features), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}  loss {loss.item():.4f}")
