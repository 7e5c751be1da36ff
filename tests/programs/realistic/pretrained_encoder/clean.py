"""Self-supervised pretraining, then a linear probe: the encoder learns to reconstruct unlabeled rows, its weights are
loaded into a classifier, frozen, and only the head trains on the few labeled rows."""

import argparse

import torch
import torch.nn.functional as F
from models import Classifier, Reconstructor


def make_data(n, generator):
    basis = torch.randn(3, 20, generator=generator)
    labels = torch.randint(0, 3, (n,), generator=generator)
    rows = basis[labels] + 0.3 * torch.randn(n, 20, generator=generator)
    return rows, labels


def pretrain(model, rows, epochs, lr):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(epochs):
        for batch in rows.split(64):
            optimizer.zero_grad()
            F.mse_loss(model(batch), batch).backward()
            optimizer.step()


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
    parser = argparse.ArgumentParser(description="pretrain an encoder, then probe it")
    parser.add_argument("--pretrain-epochs", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    unlabeled, _ = make_data(2048, generator)
    rows, labels = make_data(256, generator)

    autoencoder = Reconstructor()
    pretrain(autoencoder, unlabeled, args.pretrain_epochs, 1e-2)

    classifier = Classifier()
    classifier.encoder.load_state_dict(autoencoder.encoder.state_dict())
    for param in classifier.encoder.parameters():
        param.requires_grad_(False)
    train_probe(classifier, rows, labels, args.epochs, args.lr)


if __name__ == "__main__":
    main()
