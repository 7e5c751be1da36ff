"""Data loading dominates the step: a slow Dataset read in the main process (num_workers=0).

The model waits for every batch; a faster GPU would not help. TensorSight's phase breakdown shows data loading
taking most of each step and reports it at the DataLoader line, suggesting num_workers, persistent workers and
pin_memory.
"""

import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)


class SlowDataset(Dataset):
    """Each item costs a millisecond, like decoding an image from disk on every access."""

    def __init__(self, size: int = 512) -> None:
        self.inputs = torch.randn(size, 16)
        self.targets = 2.0 * self.inputs[:, :1] - self.inputs[:, 1:2]

    def __len__(self) -> int:
        return len(self.inputs)

    def __getitem__(self, index: int):
        time.sleep(0.001)  # the slow part: per-item decoding / augmentation
        return self.inputs[index], self.targets[index]


loader = DataLoader(SlowDataset(), batch_size=16, shuffle=True)  # num_workers=0: loads in the training process
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
loss_fn = nn.MSELoss()

for step, (x, y) in enumerate(loader):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    if step == 29:
        break
print("done")
