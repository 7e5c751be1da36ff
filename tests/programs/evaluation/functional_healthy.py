"""A healthy classifier whose validation loss is a functional loss imported by name.

``from torch.nn.functional import cross_entropy`` runs after ``import torch``, so it is the function TensorSight
relays; validate() runs in eval mode under no_grad each epoch and the loss falls with the training loss: nothing to
report.
"""

import argparse

import torch
from torch import nn
from torch.nn.functional import cross_entropy
from torch.utils.data import DataLoader, TensorDataset


def build_model(features, classes):
    return nn.Sequential(nn.Linear(features, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, classes))


def train_epoch(model, loader, optimizer):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        loss = cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()


def validate(model, loader):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += cross_entropy(model(x), y, reduction="sum").item()
    return total / len(loader.dataset)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=6)
    args = parser.parse_args()
    torch.manual_seed(0)
    features, classes = 32, 4
    centres = torch.randn(classes, features) * 0.3
    labels = torch.arange(2400) % classes
    inputs = centres[labels] + torch.randn(2400, features)
    train_loader = DataLoader(TensorDataset(inputs[:2000], labels[:2000]), batch_size=64, shuffle=True)
    val_loader = DataLoader(TensorDataset(inputs[2000:], labels[2000:]), batch_size=200)
    model = build_model(features, classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(args.epochs):
        train_epoch(model, train_loader, optimizer)
        print(f"epoch {epoch}: val loss {validate(model, val_loader):.4f}")


if __name__ == "__main__":
    main()
