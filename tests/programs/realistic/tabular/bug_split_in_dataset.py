"""The tabular classifier, whose custom Dataset serves overlapping row ranges as train and validation splits.

The validation range starts 160 rows before the training range ends: half of the validation rows are training rows,
and the validation accuracy is optimistic.
"""

import argparse

import torch
import torch.nn as nn
from engine import evaluate, train_one_epoch
from torch.utils.data import DataLoader, Dataset
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


class CustomerDataset(Dataset):
    """Rows [0, N_TRAIN) are the training split, the last 400 rows the validation split."""

    def __init__(self, split, seed=0):
        numeric, counts, labels = synthetic_records(seed)
        features = torch.cat([numeric, torch.log1p(counts)], dim=1)
        rows = slice(0, N_TRAIN) if split == "train" else slice(N_ROWS - 400, N_ROWS)  # BUG: leakage
        self.features = features[rows]
        self.labels = labels[rows]

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return self.features[index], self.labels[index]


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
    train_loader = DataLoader(CustomerDataset("train"), batch_size=args.batch_size, shuffle=True, drop_last=True)
    val_loader = DataLoader(CustomerDataset("val"), batch_size=256)

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
