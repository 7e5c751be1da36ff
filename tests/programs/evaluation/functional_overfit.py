"""Overfitting seen through a functional loss: a wide network memorises 64 noisy samples.

test() sums ``F.mse_loss(..., reduction="sum")`` over the test loader in eval mode under no_grad, the way the
PyTorch examples write it; the test loss turns around while the training loss keeps falling.
"""

import argparse

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Regressor(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(features, 256)
        self.fc2 = nn.Linear(256, 256)
        self.fc3 = nn.Linear(256, 1)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def train(model, loader, optimizer):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()


def test(model, loader):
    model.eval()
    test_loss = 0.0
    with torch.no_grad():
        for x, y in loader:
            test_loss += F.mse_loss(model(x), y, reduction="sum").item()  # BUG: dynamics
    return test_loss / len(loader.dataset)


def make_split(weights, count, noise):
    x = torch.randn(count, weights.shape[0])
    return x, x @ weights + noise * torch.randn(count, 1)


def main():
    parser = argparse.ArgumentParser(description="functional-loss overfitting")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--test-interval", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    weights = torch.randn(20, 1)
    train_set = TensorDataset(*make_split(weights, 64, noise=3.0))  # few, noisy samples: easy to memorise
    test_set = TensorDataset(*make_split(weights, 256, noise=3.0))
    train_loader = DataLoader(train_set, batch_size=64)
    test_loader = DataLoader(test_set, batch_size=128)
    model = Regressor(20)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(1, args.epochs + 1):
        train(model, train_loader, optimizer)
        if epoch % args.test_interval == 0:
            print(f"epoch {epoch}: test loss {test(model, test_loader):.3f}")


if __name__ == "__main__":
    main()
