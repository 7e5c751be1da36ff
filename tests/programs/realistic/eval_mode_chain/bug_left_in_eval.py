"""An MLP with dropout and batch norm trained by a small Trainer; a validation callback evaluates after each epoch
through a helper that calls model.eval() and never model.train(): from the second epoch on, training runs with
dropout off and frozen batch-norm statistics.
"""

import argparse

import torch
from callbacks_left_in_eval import ValidationCallback
from torch import nn
from trainer import Trainer


def make_data(n, generator):
    x = torch.randn(n, 10, generator=generator)
    y = (x[:, 0] + x[:, 1] * x[:, 2] > 0).long() + 2 * (x[:, 3] > 0.5).long()
    return x, y


def build_model():
    return nn.Sequential(
        nn.Linear(10, 64),
        nn.BatchNorm1d(64),
        nn.ReLU(),
        nn.Dropout(0.2),
        nn.Linear(64, 64),
        nn.ReLU(),
        nn.Linear(64, 4),
    )


def main():
    parser = argparse.ArgumentParser(description="MLP with a validation callback")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    train_x, train_y = make_data(2048, generator)
    val_x, val_y = make_data(512, generator)
    model = build_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    trainer = Trainer(model, optimizer, [ValidationCallback(val_x, val_y)])
    trainer.fit(train_x, train_y, args.epochs, args.batch_size)


if __name__ == "__main__":
    main()
