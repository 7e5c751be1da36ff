"""Binary classifier on synthetic tabular data whose model ends in a sigmoid (kept from an earlier BCELoss version)
while the loss is BCEWithLogitsLoss, which applies sigmoid again: the probabilities are squashed twice."""

import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class TabularNet(nn.Module):
    def __init__(self, in_features, hidden=32, dropout=0.1):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(in_features, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, hidden), nn.ReLU()
        )
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        h = self.body(x)
        probs = torch.sigmoid(self.head(h))  # BUG: training-logic sigmoid before BCEWithLogitsLoss
        return probs.squeeze(1)


def make_data(n, features, generator):
    x = torch.randn(n, features, generator=generator) * 3.0 + 1.5
    score = x[:, 0] * x[:, 1] - 2.0 * x[:, 2] + 0.5 * x[:, 3] ** 2
    y = (score > score.median()).float()
    return x, y


def train_epoch(model, loader, criterion, optimizer):
    model.train()
    total, count = 0.0, 0
    for xb, yb in loader:
        optimizer.zero_grad()
        output = model(xb)
        loss = criterion(output, yb)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(xb)
        count += len(xb)
    return total / count


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct, count = 0, 0
    for xb, yb in loader:
        probs = model(xb)
        correct += ((probs > 0.5).float() == yb).sum().item()
        count += len(yb)
    return correct / count


def main():
    parser = argparse.ArgumentParser(description="binary tabular classifier")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    generator = torch.Generator().manual_seed(args.seed)
    torch.manual_seed(args.seed)

    x, y = make_data(800, 6, generator)
    n_train = 640
    x_train, x_val = x[:n_train], x[n_train:]
    y_train, y_val = y[:n_train], y[n_train:]
    mean, std = x_train.mean(0), x_train.std(0)
    x_train, x_val = (x_train - mean) / std, (x_val - mean) / std

    train_loader = DataLoader(TensorDataset(x_train, y_train), batch_size=args.batch_size, shuffle=True)
    val_loader = DataLoader(TensorDataset(x_val, y_val), batch_size=256)
    model = TabularNet(x.shape[1])
    pos_weight = (y_train == 0).sum() / (y_train == 1).sum()
    criterion = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(1, args.epochs + 1):
        train_loss = train_epoch(model, train_loader, criterion, optimizer)
        accuracy = evaluate(model, val_loader)
        print(f"epoch {epoch}: loss: {train_loss:.4f} val accuracy {accuracy:.3f}")


if __name__ == "__main__":
    main()
