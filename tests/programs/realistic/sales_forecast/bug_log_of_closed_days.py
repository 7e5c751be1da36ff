"""Daily sales regression (as clean.py) whose target is log(units sold): the days a store was closed sold 0 units, so
their targets are -inf, the loss is inf from the first batch that holds one, and every weight becomes NaN."""

import argparse

import numpy as np
import torch
import torch.nn as nn
from stores import SalesRows, load_sales, standardize
from torch.utils.data import DataLoader
from trainer import PrintLoss, Trainer


def build_model(inputs, hidden):
    return nn.Sequential(
        nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)
    )


def main():
    parser = argparse.ArgumentParser(description="store sales forecast")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args()
    torch.manual_seed(0)

    table, units = load_sales()
    target = np.log(units)  # BUG: nonfinite log(0) = -inf on the days a store was closed
    split = int(0.8 * len(table))
    train_x, valid_x = standardize(table[:split], table[split:])
    train_rows = SalesRows(train_x, target[:split])
    valid_rows = SalesRows(valid_x, target[split:])

    model = build_model(table.shape[1], args.hidden)
    trainer = Trainer(model, torch.optim.Adam(model.parameters(), lr=args.lr), nn.MSELoss(), [PrintLoss()])
    trainer.fit(
        DataLoader(train_rows, batch_size=64, shuffle=True), DataLoader(valid_rows, batch_size=256), args.epochs
    )


if __name__ == "__main__":
    main()
