"""User code that torch calls back: a Dataset's ``__getitem__`` (in this process and in a DataLoader worker) and a
forward hook, after ``torch.optim.Adam`` has imported ``torch._dynamo`` lazily (tests/agent/debugger/test_untraced.py).
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __init__(self, where):
        self.where = where

    def __len__(self):
        return 4

    def __getitem__(self, index):
        value = torch.tensor([float(index * index)])  # @bp getitem
        return value


shapes = []


def on_forward(module, inputs, output):
    shapes.append(tuple(output.shape))  # @bp hook


model = nn.Linear(1, 1)
optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
model.register_forward_hook(on_forward)
for batch in DataLoader(Squares("main"), batch_size=2, num_workers=0):
    model(batch).sum().backward()
    optimizer.step()
    break
for batch in DataLoader(Squares("worker"), batch_size=2, num_workers=1):
    print("worker batch", batch.flatten().tolist())
    break
print("done")
