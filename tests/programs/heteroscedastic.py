"""Heteroscedastic regression: the network predicts a mean and a variance for each of 16 targets and is trained with
a Gaussian negative log-likelihood written by hand. The variance head is a plain linear layer (the softplus that keeps
a variance positive is missing): training shrinks the variances towards the squared errors until one goes below 0
(around step 47), and torch.log of a negative variance is NaN. Used by tests/agent/sentinel/test_view_link.py and
tests/e2e/nanLink.test.ts."""

import argparse

import torch
from torch import nn


class MeanVarianceNet(nn.Module):
    def __init__(self, features, hidden, targets):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.Tanh())
        self.mean = nn.Linear(hidden, targets)
        self.variance = nn.Linear(hidden, targets)
        nn.init.constant_(self.variance.bias, 1.0)

    def forward(self, x):
        h = self.body(x)
        return self.mean(h), self.variance(h)


def gaussian_nll(mean, variance, target):
    return (0.5 * torch.log(variance) + (target - mean) ** 2 / (2 * variance)).mean()  # @nan


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lr", type=float, default=0.2)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=32)
    return parser.parse_args()


def main():
    args = parse_args()
    torch.manual_seed(0)
    x = torch.randn(1024, 8)
    y = torch.tanh(x @ torch.randn(8, 16)) + 0.05 * torch.randn(1024, 16)
    model = MeanVarianceNet(8, 32, 16)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    for step in range(args.steps):
        idx = torch.arange(step * args.batch_size, (step + 1) * args.batch_size) % x.shape[0]
        mean, variance = model(x[idx])
        loss = gaussian_nll(mean, variance, y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f} min variance {variance.min().item():.4f}")
        if not torch.isfinite(loss):
            break


if __name__ == "__main__":
    main()
