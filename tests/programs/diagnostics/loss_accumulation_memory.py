"""Bug: ``total_loss += loss`` keeps every step's autograd graph alive (memory grows), inside train(epoch)."""

import argparse

import torch
import torch.nn.functional as F
from torch import nn

model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
X = torch.randn(96, 32)
y = torch.randn(96, 1)


def train(epoch, batch_size):
    model.train()
    total_loss = 0
    for start in range(0, len(X), batch_size):
        data, target = X[start : start + batch_size], y[start : start + batch_size]
        optimizer.zero_grad()
        loss = F.mse_loss(model(data), target)
        loss.backward()
        optimizer.step()
        total_loss += loss  # BUG: memory
    print(f"epoch {epoch}: mean loss {total_loss.item() / (len(X) // batch_size):.4f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    torch.manual_seed(0)
    for epoch in range(1, args.epochs + 1):
        train(epoch, args.batch_size)


if __name__ == "__main__":
    main()
