"""Evaluation in training mode through a helper: ``evaluate(net)`` scores the held-out tensors while dropout is on.

The helper has no ``net.eval()`` (and no ``no_grad``), so every reported validation loss comes from a randomly
thinned network.
"""

import argparse

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(16, 64)
        self.dropout = nn.Dropout(0.5)
        self.out = nn.Linear(64, 2)

    def forward(self, x):
        return self.out(self.dropout(F.relu(self.hidden(x))))


torch.manual_seed(0)
inputs = torch.randn(1200, 16)
labels = (inputs[:, 0] + inputs[:, 1] > 0).long()
val_x, val_y = inputs[1000:], labels[1000:]


def evaluate(net):
    return F.cross_entropy(net(val_x), val_y).item()  # BUG: training-logic


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()
    loader = DataLoader(TensorDataset(inputs[:1000], labels[:1000]), batch_size=50, shuffle=True)
    net = Net()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(args.epochs):
        for x, y in loader:
            optimizer.zero_grad()
            F.cross_entropy(net(x), y).backward()
            optimizer.step()
        print(f"epoch {epoch}: val loss {evaluate(net):.3f}")


if __name__ == "__main__":
    main()
