"""Building energy use, bug: the learning rate was raised from 0.02 to 0.1 "to train faster"; the first steps move the
weights by a fifth of their size or more each, kill most ReLUs, and the loss settles far above the clean run's.

Symptom (plain run): the loss falls after a jump in the first epoch, then plateaus several times above the clean
run's; nothing is NaN.
"""

import argparse

import torch
from engine import evaluate, train_one_epoch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset, random_split


def synthetic_buildings(n, generator):
    features = torch.randn(n, 8, generator=generator)
    weights = torch.tensor([1.5, -2.0, 0.7, 0.0, 1.1, -0.4, 0.9, 0.3])
    energy = features @ weights + 0.8 * torch.tanh(features[:, 0] * features[:, 1]) + 3.0
    return features, energy + 0.1 * torch.randn(n, generator=generator)


def build_model():
    return nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))


def main():
    parser = argparse.ArgumentParser(description="energy use regression")
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    dataset = TensorDataset(*synthetic_buildings(2000, generator))
    train_set, test_set = random_split(dataset, [1600, 400], generator=generator)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, generator=generator)
    test_loader = DataLoader(test_set, batch_size=200)
    model = build_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)  # BUG: dynamics far too high
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    for epoch in range(args.epochs):
        loss = train_one_epoch(model, train_loader, optimizer)
        scheduler.step()
        print(f"epoch {epoch + 1} loss: {loss:.4f} test mae: {evaluate(model, test_loader):.4f}")


if __name__ == "__main__":
    main()
