"""Linear probe, bug: the pretraining stage was dropped from the script but the freeze stayed, so the probe trains a
head on a frozen, randomly initialised encoder.

Symptom (plain run): the loss still falls (a random projection keeps some signal), but far more slowly than the clean
run's, and nothing says the encoder was never trained.
"""

import argparse

import torch
import torch.nn.functional as F
from models import Classifier


def make_data(n, generator):
    basis = torch.randn(3, 20, generator=generator)
    labels = torch.randint(0, 3, (n,), generator=generator)
    rows = basis[labels] + 0.3 * torch.randn(n, 20, generator=generator)
    return rows, labels


def train_probe(model, rows, labels, epochs, lr):
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for epoch in range(epochs):
        total = 0.0
        for xb, yb in zip(rows.split(32), labels.split(32), strict=True):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(xb)
        print(f"epoch {epoch + 1} loss: {total / len(rows):.4f}")


def main():
    parser = argparse.ArgumentParser(description="probe an encoder")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    rows, labels = make_data(256, generator)

    classifier = Classifier()
    for param in classifier.encoder.parameters():
        param.requires_grad_(False)  # BUG: training-logic the encoder was never pretrained
    train_probe(classifier, rows, labels, args.epochs, args.lr)


if __name__ == "__main__":
    main()
