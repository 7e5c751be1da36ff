"""Tabular classifier on a synthetic "sensor" table: ten classes, each a cluster in 20 features.

The table is shuffled with one permutation for the features and another for the labels, so each row's label is
another row's: the MLP trains at chance level. Split 80/20, standardised with the training statistics; an MLP
trained with Adam and F.cross_entropy, evaluated on the held-out rows each epoch.
"""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def make_table(rows, features, classes, seed):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0.0, 1.5, size=(classes, features))
    labels = rng.integers(0, classes, size=rows)
    table = centers[labels] + rng.normal(0.0, 1.0, size=(rows, features))
    return table.astype(np.float32), labels.astype(np.int64)


class MLP(nn.Module):
    def __init__(self, features, hidden, classes):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


def run_epoch(model, loader, optimizer):
    model.train()
    total, count = 0.0, 0
    for features, labels in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(features), labels)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(labels)
        count += len(labels)
    return total / count


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct, total = 0, 0
    for features, labels in loader:
        correct += (model(features).argmax(1) == labels).sum().item()
        total += len(labels)
    return correct / total


def main():
    parser = argparse.ArgumentParser(description="MLP on a synthetic sensor table")
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)

    features, labels = make_table(args.rows, 20, 10, args.seed)
    rng = np.random.default_rng(args.seed + 1)
    features = features[rng.permutation(len(features))]
    labels = labels[rng.permutation(len(labels))]  # BUG: training-logic|dynamics its own permutation: at chance level
    cut = int(0.8 * len(features))
    x_train, y_train, x_test, y_test = features[:cut], labels[:cut], features[cut:], labels[cut:]
    mean, std = x_train.mean(axis=0), x_train.std(axis=0) + 1e-6
    x_train, x_test = (x_train - mean) / std, (x_test - mean) / std

    train_loader = DataLoader(
        TensorDataset(torch.from_numpy(x_train), torch.from_numpy(y_train)), batch_size=args.batch_size, shuffle=True
    )
    test_loader = DataLoader(TensorDataset(torch.from_numpy(x_test), torch.from_numpy(y_test)), batch_size=256)
    model = MLP(20, 64, 10)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(1, args.epochs + 1):
        loss = run_epoch(model, train_loader, optimizer)
        accuracy = evaluate(model, test_loader)
        print(f"epoch {epoch} train loss: {loss:.4f} test accuracy {accuracy:.3f}")


if __name__ == "__main__":
    main()
