"""A classifier trained with deliberate gradient accumulation: one optimizer step every ``--accumulate`` batches,
each batch's loss divided by that count (the usual way to train with a larger effective batch)."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def train(model, loader, optimizer, accumulate: int) -> float:
    model.train()
    total = 0.0
    optimizer.zero_grad()
    for batch_idx, (data, target) in enumerate(loader):
        loss = F.cross_entropy(model(data), target) / accumulate
        loss.backward()
        total += loss.item()
        if (batch_idx + 1) % accumulate == 0:
            optimizer.step()
            optimizer.zero_grad()
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--accumulate", type=int, default=4)
    args = parser.parse_args()
    torch.manual_seed(0)
    features = torch.randn(640, 10)
    labels = (features[:, 0] + features[:, 1] > 0).long()
    loader = DataLoader(TensorDataset(features, labels), batch_size=16, shuffle=True)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(1, args.epochs + 1):
        print(f"epoch {epoch} loss {train(model, loader, optimizer, args.accumulate):.4f}")


if __name__ == "__main__":
    main()
