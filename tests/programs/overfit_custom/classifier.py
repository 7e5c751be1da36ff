"""Tabular classifier trained by engine.Trainer with objectives.compute_loss (a user-written loss in another module)."""

import argparse

import torch
from engine import Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self, features, hidden, classes, dropout):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(features, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, hidden), nn.GELU()
        )
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.net(x))


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--smoothing", type=float, default=0.0)
    return parser.parse_args()


def main():
    args = parse_args()
    torch.manual_seed(0)
    features, classes = 16, 6
    x = torch.randn(512, features)
    y = (x[:, :classes] + 0.5 * torch.randn(512, classes)).argmax(dim=1)
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True)
    model = MLP(features, 64, classes, dropout=0.1)
    trainer = Trainer(model, loader, lr=args.lr, smoothing=args.smoothing)
    history = trainer.fit(args.epochs)
    print(f"final loss {history[-1]:.4f}")


if __name__ == "__main__":
    main()
