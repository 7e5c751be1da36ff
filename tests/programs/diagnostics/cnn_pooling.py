"""Clean: a small MNIST-style CNN whose forward mixes modules and functional ops (the shape map's order test).

The modules are registered in another order than they run (``fc2`` before ``fc1``, ``conv2`` before ``conv1``), the
pooling, flattening and activations are functional, and the first ReLU works in place.
"""

import argparse

import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc2 = nn.Linear(32, 10)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.act = nn.ReLU(inplace=True)
        self.fc1 = nn.Linear(16 * 7 * 7, 32)

    def forward(self, x):
        x = self.conv1(x)
        x = self.act(x)
        x = F.max_pool2d(x, 2)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        return self.fc2(x)


def train(model, images, labels, optimizer, args, epoch):
    model.train()
    for start in range(0, len(images), args.batch_size):
        data, target = images[start : start + args.batch_size], labels[start : start + args.batch_size]
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.3f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    torch.manual_seed(0)
    images = torch.randn(64, 1, 28, 28)
    labels = torch.randint(10, (64,))
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(1, args.epochs + 1):
        train(model, images, labels, optimizer, args, epoch)


if __name__ == "__main__":
    main()
