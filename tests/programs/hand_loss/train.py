"""A classifier trained with a hand-written cross-entropy from losses.py, Adam and a StepLR schedule. With the default
learning rate the logits grow until the softmax underflows to exactly 0 for some sample, and torch.log makes -Inf
(around step 65); the loss is NaN from then on. It stops at the first NaN loss unless --keep-going (many scripts
train on regardless)."""

import argparse

import torch
from losses import per_class_recall, soft_cross_entropy
from torch import nn


def make_blobs(n, features, classes, scale, seed):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=generator) * scale
    w = torch.randn(features, classes, generator=generator)
    return x, (x @ w).argmax(dim=1)


class Classifier(nn.Module):
    def __init__(self, features, hidden, classes):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.body(x)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lr", type=float, default=0.035)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--keep-going", action="store_true", help="train on after the loss turns NaN")
    parser.add_argument("--inline", action="store_true", help="write the loss in the loop instead of calling losses.py")
    return parser.parse_args()


def main():
    args = parse_args()
    torch.manual_seed(0)
    classes = 5
    x, y = make_blobs(2048, 20, classes, scale=10.0, seed=1)
    model = Classifier(20, 64, classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30, gamma=0.5)
    history = []
    for step in range(args.steps):
        idx = torch.arange(step * args.batch_size, (step + 1) * args.batch_size) % x.shape[0]
        inputs, target = x[idx], y[idx]
        logits = model(inputs)
        if args.inline:
            onehot = torch.nn.functional.one_hot(target, classes).float()
            loss = -(onehot * torch.log(torch.softmax(logits, 1))).sum(1).mean()  # @nan inline
        else:
            loss = soft_cross_entropy(logits, target, classes)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        with torch.no_grad():
            recall = per_class_recall(logits, target, classes)
        history.append((loss.item(), recall.mean().item()))
        if step % 20 == 0 or not torch.isfinite(loss):
            print(f"step {step} loss {loss.item():.4f} recall {recall.mean().item():.3f}")
        if not torch.isfinite(loss) and not args.keep_going:
            break
    print(f"trained {len(history)} steps")


if __name__ == "__main__":
    main()
