"""A sensor classifier whose Dataset computes hand-made features per window in plain Python (rolling means, counts of
threshold crossings, a slope), the way feature-engineering code often starts: argparse, main(), a small linear model.

Each item costs far more than the model's step, so data loading is most of every step: the data-loading verdict's
true positive, on an idle machine and on a busy one.
"""

import argparse
import itertools
import random

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


def window_features(window):
    n = len(window)
    mean = sum(window) / n
    spread = (sum((v - mean) ** 2 for v in window) / n) ** 0.5
    rolling = [sum(window[i : i + 8]) / 8 for i in range(n - 8)]
    crossings = sum(1 for a, b in itertools.pairwise(rolling) if (a - mean) * (b - mean) < 0)
    xs = range(n)
    x_mean = (n - 1) / 2
    slope = sum((x - x_mean) * (v - mean) for x, v in zip(xs, window, strict=True)) / sum((x - x_mean) ** 2 for x in xs)
    peaks = sum(1 for a, b, c in zip(window, window[1:], window[2:], strict=False) if b > a and b > c)
    return [mean, spread, crossings / n, slope, peaks / n, max(window) - min(window)]


class SensorWindows(Dataset):
    def __init__(self, signals, labels):
        self.signals, self.labels = signals, labels

    def __len__(self):
        return len(self.signals)

    def __getitem__(self, index):
        return torch.tensor(window_features(self.signals[index])), self.labels[index]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    torch.manual_seed(0)
    rng = random.Random(0)
    labels = [rng.randrange(2) for _ in range(1536)]
    signals = [[rng.gauss(0.3 * label * i / 128, 1.0) for i in range(128)] for label in labels]
    loader = DataLoader(SensorWindows(signals, labels), batch_size=args.batch_size, shuffle=True)
    model = nn.Linear(6, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(args.epochs):
        for features, targets in loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(features), targets)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
