"""Entry point that builds the data and a dropout regressor, and hands them to ``trainer.Trainer``."""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from trainer import Trainer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.randn(900, 8)
    y = x.sum(dim=1, keepdim=True) + 0.1 * torch.randn(900, 1)
    train_loader = DataLoader(TensorDataset(x[:750], y[:750]), batch_size=50, shuffle=True)
    valid_loader = DataLoader(TensorDataset(x[750:], y[750:]), batch_size=150)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    Trainer(model, optimizer, train_loader, valid_loader).fit(args.epochs)


if __name__ == "__main__":
    main()
