"""Binary classifier of synthetic "credit" records with small minibatches and a learning rate 100 times too high.

Adam at lr=0.3 throws the loss up in the first steps; it then swings by about 70% from one step to the next and ends
above its first value, while its smoothed trend still falls from the early jump (no NaN ever appears).
"""

import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def synthetic_records(count, seed):
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(count, 12, generator=generator)
    weights = torch.linspace(-1.5, 1.5, 12)
    logits = features @ weights + 0.5 * features[:, 0] * features[:, 1]
    labels = (torch.rand(count, generator=generator) < torch.sigmoid(logits)).float()
    return features, labels


class Scorer(nn.Module):
    def __init__(self, features=12, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def fit(model, loader, optimizer, criterion, epochs, log_every):
    step = 0
    for epoch in range(1, epochs + 1):
        model.train()
        for features, labels in loader:
            optimizer.zero_grad()
            loss = criterion(model(features), labels)
            loss.backward()
            optimizer.step()
            step += 1
            if step % log_every == 0:
                print(f"epoch {epoch} step {step} loss: {loss.item():.4f}")


@torch.no_grad()
def accuracy(model, features, labels):
    model.eval()
    return ((model(features) > 0).float() == labels).float().mean().item()


def main():
    parser = argparse.ArgumentParser(description="noisy minibatch training of a record scorer")
    parser.add_argument("--lr", type=float, default=0.3)  # BUG: dynamics lr far too high
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(args.seed)

    x_train, y_train = synthetic_records(800, seed=1)
    x_test, y_test = synthetic_records(400, seed=2)
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=args.batch_size, shuffle=True)
    model = Scorer()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    fit(model, loader, optimizer, nn.BCEWithLogitsLoss(), args.epochs, log_every=25)
    print(f"test accuracy {accuracy(model, x_test, y_test):.3f}")


if __name__ == "__main__":
    main()
