"""Bug: a regression whose model predicts [N, 1] while the targets are [N] (loss, hand-written error, accuracy)."""

import argparse

import torch
import torch.nn.functional as F
from torch import nn


class Regressor(nn.Module):
    def __init__(self, n_in=8, hidden=32):
        super().__init__()
        self.fc1 = nn.Linear(n_in, hidden)
        self.fc2 = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train(model, X, y, optimizer, args, epoch):
    model.train()
    for start in range(0, len(X), args.batch_size):
        data, target = X[start : start + args.batch_size], y[start : start + args.batch_size]
        optimizer.zero_grad()
        output = model(data)
        loss = F.mse_loss(output, target)  # BUG: shape
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: train loss {loss.item():.4f}")


def test(model, X, y, labels):
    model.eval()
    with torch.no_grad():
        output = model(X)
        error = ((output - y) ** 2).mean()  # BUG: shape
        scores = torch.cat([output, -output], dim=1)
        accuracy = (scores.argmax(1) == labels[:, None]).float().mean()  # BUG: shape
    print(f"test error {error.item():.4f} accuracy {accuracy.item():.3f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    torch.manual_seed(0)
    X = torch.randn(256, 8)
    y = X @ torch.randn(8) + 0.1 * torch.randn(256)
    labels = (y < 0).long()
    model = Regressor()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(1, args.epochs + 1):
        train(model, X[:192], y[:192], optimizer, args, epoch)
        test(model, X[192:], y[192:], labels[192:])


if __name__ == "__main__":
    main()
