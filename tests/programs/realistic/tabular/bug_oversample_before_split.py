"""The tabular classifier, oversampling the minority class before random_split makes the train/validation split.

The duplicated minority rows fall on both sides of the split, so the validation set holds exact copies of training
rows and its accuracy is optimistic. (Split first, then oversample the training split only.)
"""

import argparse

import torch
import torch.nn as nn
from engine import evaluate, train_one_epoch
from torch.utils.data import DataLoader, TensorDataset, random_split
from trainer import Trainer

N_ROWS = 1200
N_TRAIN = 960


def synthetic_records(seed=0):
    """Four numeric columns and two count columns (many zeros); the label depends on both."""
    generator = torch.Generator().manual_seed(seed)
    numeric = torch.randn(N_ROWS, 4, generator=generator)
    counts = torch.poisson(torch.full((N_ROWS, 2), 1.5), generator=generator)
    score = numeric @ torch.tensor([1.0, -0.8, 0.5, 0.0]) + 0.9 * torch.log1p(counts[:, 0]) - 0.6
    labels = (score + 0.3 * torch.randn(N_ROWS, generator=generator) > 0).long()
    return numeric, counts, labels


def balanced_records(seed=0):
    """The records with every minority-class row repeated once, to balance the classes."""
    numeric, counts, labels = synthetic_records(seed)
    features = torch.cat([numeric, torch.log1p(counts)], dim=1)
    minority = (labels == labels.bincount().argmin()).nonzero().squeeze(1)
    return torch.cat([features, features[minority]]), torch.cat([labels, labels[minority]])


class TabularNet(nn.Module):
    def __init__(self, in_features, hidden=64, classes=2, dropout=0.2):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_features, hidden),
            nn.BatchNorm1d(hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, classes),
        )

    def forward(self, x):
        return self.net(x)


def main():
    parser = argparse.ArgumentParser(description="tabular MLP with a Trainer class")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--weight-decay", type=float, default=1e-4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    features, labels = balanced_records()
    splits = [0.8, 0.2]
    train_set, val_set = random_split(TensorDataset(features, labels), splits)  # BUG: leakage (copies on both sides)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, drop_last=True)
    val_loader = DataLoader(val_set, batch_size=256)

    model = TabularNet(in_features=6).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    trainer = Trainer(model, optimizer, scheduler, device)
    for epoch in range(1, args.epochs + 1):
        train_one_epoch(trainer, train_loader, epoch)
        val_loss, val_acc = evaluate(model, val_loader, device)
        lr = trainer.end_epoch()
        print(f"epoch {epoch}: val loss: {val_loss:.4f} val accuracy {val_acc:.3f} next lr {lr:.5f}")


if __name__ == "__main__":
    main()
