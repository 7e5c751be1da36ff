"""A tabular classifier whose Dataset augments each row with a chain of small Python transforms, written the way
such training code is: argparse, main(), a ``Compose`` of callables applied per item, the DataLoader's default
collation, an MLP, Adam.

Each item goes through a dozen Python calls, so a function profiler, which pays for every call, slows the data phase
several times over while the model's tensor work runs at full speed: under the profiler, data loading looks like
most of the step. The profile tests compare the time per phase that ``tensorsight profile`` reports with the one a
measured run (the code lens) reports for this script.
"""

import argparse
import math
import random

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Compose:
    def __init__(self, *transforms):
        self.transforms = transforms

    def __call__(self, row):
        for transform in self.transforms:
            row = transform(row)
        return row


class Jitter:
    def __init__(self, scale, seed):
        self.scale = scale
        self.rng = random.Random(seed)

    def __call__(self, row):
        return [value + self.rng.gauss(0.0, self.scale) for value in row]


class Clip:
    def __init__(self, low, high):
        self.low, self.high = low, high

    def __call__(self, row):
        return [min(self.high, max(self.low, value)) for value in row]


class SignedLog:
    def __call__(self, row):
        return [math.copysign(math.log1p(abs(value)), value) for value in row]


class Standardize:
    def __call__(self, row):
        mean = sum(row) / len(row)
        spread = math.sqrt(sum((value - mean) ** 2 for value in row) / len(row)) or 1.0
        return [(value - mean) / spread for value in row]


class RowDataset(Dataset):
    def __init__(self, rows, labels, transform):
        self.rows, self.labels, self.transform = rows, labels, transform

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, index):
        row = self.transform(self.rows[index])
        return torch.tensor(row, dtype=torch.float32), self.labels[index]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    torch.manual_seed(0)
    generator = random.Random(0)
    features = 48
    rows = [[generator.uniform(-3.0, 3.0) for _ in range(features)] for _ in range(1280)]
    labels = [int(sum(row[:4]) > 0) for row in rows]
    transform = Compose(Jitter(0.05, seed=1), Clip(-2.5, 2.5), SignedLog(), Standardize())
    loader = DataLoader(RowDataset(rows, labels, transform), batch_size=args.batch_size, shuffle=True)
    model = nn.Sequential(nn.Linear(features, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        for inputs, targets in loader:
            optimizer.zero_grad()
            loss = criterion(model(inputs), targets)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
