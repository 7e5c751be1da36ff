"""The MLP on synthetic tabular data, evaluated on a test loader built on the training set.

A copy-paste slip: test_loader wraps train_set instead of test_set. The real test tensors (test_x, test_y) exist and
are standardised like the training ones, but the evaluation never reads them: the reported test accuracy is the
training accuracy.
"""

import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from trainer import Trainer


def make_classification(samples, features, classes, generator):
    """Gaussian blobs: one centre per class, unit noise around it."""
    centres = 0.6 * torch.randn(classes, features, generator=generator)
    labels = torch.randint(0, classes, (samples,), generator=generator)
    inputs = centres[labels] + torch.randn(samples, features, generator=generator)
    return inputs, labels


def build_model(features, hidden, classes):
    return nn.Sequential(
        nn.Linear(features, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, classes),
    )


def main():
    parser = argparse.ArgumentParser(description="MLP on synthetic tabular data")
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--classes", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--test-batch-size", type=int, default=500)
    parser.add_argument("--test-fraction", type=float, default=0.2)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    generator = torch.Generator().manual_seed(args.seed)
    inputs, labels = make_classification(args.samples, args.features, args.classes, generator)

    permutation = torch.randperm(args.samples, generator=generator)
    n_test = int(args.samples * args.test_fraction)
    test_x, test_y = inputs[permutation[:n_test]], labels[permutation[:n_test]]
    train_x, train_y = inputs[permutation[n_test:]], labels[permutation[n_test:]]
    mean, std = train_x.mean(dim=0), train_x.std(dim=0)
    train_x = (train_x - mean) / std
    test_x = (test_x - mean) / std

    train_set = TensorDataset(train_x, train_y)
    test_set = TensorDataset(test_x, test_y)
    print(f"{len(train_set)} training samples, {len(test_set)} test samples")
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(train_set, batch_size=args.test_batch_size)  # BUG: leakage (evaluates on the training set)

    model = build_model(args.features, args.hidden, args.classes).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    trainer = Trainer(model, optimizer, device)
    for epoch in range(1, args.epochs + 1):
        trainer.train_epoch(train_loader, epoch)
        trainer.evaluate(test_loader)


if __name__ == "__main__":
    main()
