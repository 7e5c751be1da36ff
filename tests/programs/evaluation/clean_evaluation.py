"""Evaluation done right, in the ways training scripts do it: nothing to report.

- a dropout + batch-norm classifier trained with gradient accumulation (a step every two batches);
- evaluate(): ``model.eval()`` and ``torch.no_grad()``, then back to ``model.train()``;
- a final test under ``torch.inference_mode()`` in eval mode;
- a mean teacher: an EMA copy of the model, never trained by backward, run in training mode under no_grad on
  purpose (its noisy targets are the method);
- a small model without dropout or batch norm scored in training mode (training mode changes nothing there).
"""

import argparse
import copy

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def classifier():
    return nn.Sequential(nn.Linear(12, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 3))


def evaluate(model, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(dim=1) == y).sum().item()
    model.train()
    return correct / len(loader.dataset)


@torch.inference_mode()
def final_test(model, x, y):
    model.eval()
    return F.cross_entropy(model(x), y).item()


def update_teacher(teacher, student, decay=0.9):
    with torch.no_grad():
        for t, s in zip(teacher.parameters(), student.parameters(), strict=True):
            t.mul_(decay).add_(s, alpha=1 - decay)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--accumulate", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.randn(1100, 12)
    y = x[:, :3].argmax(dim=1)
    train_loader = DataLoader(TensorDataset(x[:800], y[:800]), batch_size=40, shuffle=True)
    val_loader = DataLoader(TensorDataset(x[800:1000], y[800:1000]), batch_size=100)
    model = classifier()
    teacher = copy.deepcopy(model)
    for p in teacher.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    linear = nn.Linear(12, 3)
    linear_optimizer = torch.optim.SGD(linear.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        model.train()
        for i, (xb, yb) in enumerate(train_loader):
            logits = model(xb)
            with torch.no_grad():
                targets = teacher(xb).softmax(dim=1)
            loss = F.cross_entropy(logits, yb) + 0.1 * F.mse_loss(logits.softmax(dim=1), targets)
            (loss / args.accumulate).backward()
            if (i + 1) % args.accumulate == 0:
                optimizer.step()
                optimizer.zero_grad()
                update_teacher(teacher, model)
            linear_optimizer.zero_grad()
            F.cross_entropy(linear(xb), yb).backward()
            linear_optimizer.step()
        linear_loss = F.cross_entropy(linear(x[800:1000]), y[800:1000]).item()
        print(f"epoch {epoch}: accuracy {evaluate(model, val_loader):.3f}, linear val loss {linear_loss:.3f}")
    print(f"test loss {final_test(model, x[1000:], y[1000:]):.3f}")


if __name__ == "__main__":
    main()
