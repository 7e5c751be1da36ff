"""Bug: a custom Dataset that wraps the same tensors for both splits, with overlapping index ranges."""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class WindowDataset(Dataset):
    def __init__(self, features, targets, start, stop):
        self.features = features
        self.targets = targets
        self.start = start
        self.stop = stop

    def __len__(self):
        return self.stop - self.start

    def __getitem__(self, index):
        return self.features[self.start + index], self.targets[self.start + index]


def train(model, loader, optimizer, epoch):
    model.train()
    for data, target in loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(data).squeeze(-1), target)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.3f}")


def test(model, loader):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for data, target in loader:
            total += nn.functional.mse_loss(model(data).squeeze(-1), target, reduction="sum").item()
    return total / len(loader.dataset)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    features = torch.randn(600, 6)
    targets = features.sum(1)
    train_set = WindowDataset(features, targets, 0, 500)
    test_set = WindowDataset(features, targets, 400, 600)  # BUG: leakage
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(1, args.epochs + 1):
        train(model, DataLoader(train_set, batch_size=50, shuffle=True), optimizer, epoch)
        print(f"test mse {test(model, DataLoader(test_set, batch_size=50)):.3f}")


if __name__ == "__main__":
    main()
