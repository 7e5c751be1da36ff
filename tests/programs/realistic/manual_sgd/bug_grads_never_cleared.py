"""A two-layer MLP classifier on synthetic blobs, trained with SGD written by hand (no torch.optim).

Each step backpropagates the cross-entropy and moves every parameter by ``-lr * grad`` under ``torch.no_grad()``,
but nothing ever clears the gradients: each update applies the sum of all earlier ones.
"""

import argparse

import torch
import torch.nn.functional as F
from torch import nn


def make_blobs(n, classes, dim, generator):
    centers = torch.randn(classes, dim, generator=generator) * 3
    labels = torch.randint(0, classes, (n,), generator=generator)
    points = centers[labels] + torch.randn(n, dim, generator=generator)
    return points, labels


class MLP(nn.Module):
    def __init__(self, dim, hidden, classes):
        super().__init__()
        self.hidden = nn.Linear(dim, hidden)
        self.out = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.out(torch.relu(self.hidden(x)))


def sgd_step(model, lr):
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad


def train(args, model, points, labels):
    for epoch in range(1, args.epochs + 1):
        for start in range(0, len(points), args.batch_size):
            xb = points[start : start + args.batch_size]
            yb = labels[start : start + args.batch_size]
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()  # BUG: training-logic gradients never cleared before the hand-written update
            sgd_step(model, args.lr)
        print(f"epoch {epoch}: loss {loss.item():.4f}")


def main():
    parser = argparse.ArgumentParser(description="MLP with hand-written SGD")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    points, labels = make_blobs(1024, 4, 8, generator)
    model = MLP(8, 32, 4)
    train(args, model, points, labels)


if __name__ == "__main__":
    main()
