"""Tabular regression, bug: the target is np.log(price) where unsold houses have price 0, so some targets are -inf.

Symptom (plain run): numpy warns 'divide by zero encountered in log' and every printed loss is nan from the first
epoch.
"""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from housing import HousingDataset, load_housing
from torch.utils.data import DataLoader


class Regressor(nn.Module):
    def __init__(self, in_features, hidden=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_features, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.net(x)


def run_epoch(model, loader, optimizer=None):
    training = optimizer is not None
    model.train(training)
    total, count = 0.0, 0
    with torch.set_grad_enabled(training):
        for features, target in loader:
            prediction = model(features)
            loss = F.mse_loss(prediction, target)
            if training:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            total += loss.item() * len(features)
            count += len(features)
    return total / count


def main():
    parser = argparse.ArgumentParser(description="House prices regression")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    torch.manual_seed(0)

    features, prices = load_housing()
    targets = np.log(prices)  # BUG: nonfinite log(0) = -inf for the unsold houses
    order = np.random.default_rng(0).permutation(len(features))
    train_idx, test_idx = order[:800], order[800:]
    train_x, test_x = features[train_idx], features[test_idx]
    mean, std = train_x.mean(axis=0), train_x.std(axis=0)
    train_x, test_x = (train_x - mean) / std, (test_x - mean) / std

    train_loader = DataLoader(HousingDataset(train_x, targets[train_idx]), batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(HousingDataset(test_x, targets[test_idx]), batch_size=200)

    model = Regressor(train_x.shape[1])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5, gamma=0.5)
    for epoch in range(args.epochs):
        train_loss = run_epoch(model, train_loader, optimizer)
        test_loss = run_epoch(model, test_loader)
        scheduler.step()
        print(f"epoch {epoch:2d} loss: {train_loss:.4f} test mse: {test_loss:.4f}")


if __name__ == "__main__":
    main()
