"""Churn classifier, bug: the export lists retained customers first and churned ones last, and the training loader
keeps that order (no shuffle), so every batch holds one class."""

import argparse

import numpy as np
import torch
import torch.nn as nn
from churn import ChurnDataset, column_stats, load_churn
from torch.utils.data import DataLoader


def make_model(in_features):
    return nn.Sequential(
        nn.Linear(in_features, 256),
        nn.ReLU(),
        nn.Linear(256, 256),
        nn.ReLU(),
        nn.Linear(256, 256),
        nn.ReLU(),
        nn.Linear(256, 1),
    )


def fit(model, loader, optimizer, criterion):
    model.train()
    total = 0.0
    for features, churned in loader:
        optimizer.zero_grad()
        loss = criterion(model(features), churned)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(features)
    return total / len(loader.dataset)


@torch.no_grad()
def accuracy(model, loader):
    model.eval()
    hits = sum(((model(x) > 0).float() == y).sum().item() for x, y in loader)
    return hits / len(loader.dataset)


def main():
    parser = argparse.ArgumentParser(description="churn MLP")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()
    torch.manual_seed(0)

    table, churned = load_churn()
    shuffled = np.random.default_rng(3).permutation(len(table))
    cut = int(0.8 * len(table))
    train_rows, valid_rows = shuffled[:cut], shuffled[cut:]
    train_rows = train_rows[np.argsort(churned[train_rows], kind="stable")]  # grouped as in the CRM export
    mean, std = column_stats(table[train_rows])
    train_x = (table[train_rows] - mean) / std
    valid_x = (table[valid_rows] - mean) / std

    train_loader = DataLoader(ChurnDataset(train_x, churned[train_rows]), batch_size=64)  # BUG: training-logic order
    valid_loader = DataLoader(ChurnDataset(valid_x, churned[valid_rows]), batch_size=256)
    model = make_model(table.shape[1])
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    criterion = nn.BCEWithLogitsLoss()
    for epoch in range(args.epochs):
        loss = fit(model, train_loader, optimizer, criterion)
        print(f"epoch {epoch + 1} loss: {loss:.4f} valid accuracy: {accuracy(model, valid_loader):.3f}")


if __name__ == "__main__":
    main()
