"""A classifier trained on the device given by --device (cpu or cuda), written the way users write it: argparse and
main(), a train() per epoch, and a hand-written binary cross-entropy whose torch.log(1 - p) turns -inf once the
sigmoid saturates (lr=10 makes the model confident within a few steps). The sentinel's first finding belongs on the
line marked @nan, whatever the device.

    python sentinel_device.py --device cuda
"""

import argparse

import torch
from torch import nn


def bce(p: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy, written by hand."""
    return -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()  # @nan


def train(model, optimizer, features, labels, epoch):
    model.train()
    total = 0.0
    for start in range(0, features.shape[0], 64):
        p = torch.sigmoid(model(features[start : start + 64]).squeeze(1))
        loss = bce(p, labels[start : start + 64])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch} loss {total:.4g}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch.device(args.device)
    features = torch.randn(512, 20)
    labels = (features[:, :5].sum(dim=1) > 0).float()  # separable: the model can become arbitrarily confident
    features, labels = features.to(device), labels.to(device)
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=10.0)
    for epoch in range(1, args.epochs + 1):
        train(model, optimizer, features, labels, epoch)


if __name__ == "__main__":
    main()
