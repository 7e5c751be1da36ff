"""Bug class: performance. Slow per-sample decoding in the main process (``num_workers=0``).

Every sample is "decoded" in Python in ``__getitem__`` (here a stand-in: parsing a text record), and the DataLoader
does it in the training process itself, so the model waits for data at every step. Nothing is wrong with the
numbers; the run is just several times slower than it needs to be.

    python -m tensorsight doctor examples/bug_performance.py

The phase breakdown shows the data phase dominating the step, and the static rules point at the DataLoader
(``performance`` findings). Fix: ``num_workers=4`` (with the entry point under ``if __name__ == "__main__":``),
or decode once up front.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
VALUES = torch.randn(1024, 64)
RECORDS = [",".join(f"{v:.6f}" for v in row.tolist()) + f";{int(row[:3].argmax())}" for row in VALUES]


class TextRecords(Dataset):
    """Parses one text record per item, every epoch (the slow part)."""

    def __len__(self) -> int:
        return len(RECORDS)

    def __getitem__(self, index: int):
        values, label = RECORDS[index].split(";")
        features = torch.tensor([float(v) for v in values.split(",")] * 8)
        return features, int(label)


loader = DataLoader(TextRecords(), batch_size=128, shuffle=True, num_workers=0)  # BUG: decoding in the main process
model = nn.Sequential(nn.Linear(512, 64), nn.ReLU(), nn.Linear(64, 3))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()

for epoch in range(2):
    for features, label in loader:
        optimizer.zero_grad()
        loss = criterion(model(features), label)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.3f}")
