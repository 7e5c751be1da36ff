"""Clean: a random_split of the first 900 rows, and the last 100 rows held out: no leakage finding."""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset, random_split


def train(model, loader, optimizer, epoch):
    model.train()
    for data, target in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.3f}")


def test(model, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in loader:
            correct += (model(data).argmax(1) == target).sum().item()
    return correct / len(loader.dataset)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    X = torch.randn(1000, 12)
    y = (X[:, 0] > 0).long()
    dataset = TensorDataset(X[:900], y[:900])
    train_set, val_set = random_split(dataset, [700, 200], generator=torch.Generator().manual_seed(1))
    holdout = TensorDataset(X[900:], y[900:])
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(1, args.epochs + 1):
        train(model, DataLoader(train_set, batch_size=100, shuffle=True), optimizer, epoch)
        print(f"val {test(model, DataLoader(val_set, batch_size=100)):.3f}")
    print(f"holdout {test(model, DataLoader(holdout, batch_size=100)):.3f}")


if __name__ == "__main__":
    main()
