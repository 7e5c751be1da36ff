"""The activity recogniser, with a test set that takes the last n_train window positions instead of the last n_test.

order[-n_train:] is 900 windows of which 600 are training windows too: the Dataset copies their rows under its own
attribute names, so only the content tells that the test set repeats the training set.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from windows import ActivityWindows, record_activities


class ActivityNet(nn.Module):
    def __init__(self, channels, classes, width=32):
        super().__init__()
        self.conv1 = nn.Conv1d(channels, width, kernel_size=5, padding=2)
        self.conv2 = nn.Conv1d(width, width, kernel_size=5, padding=2)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool1d(x, 2)
        x = F.relu(self.conv2(x))
        return self.head(x.mean(dim=-1))


def train(model, loader, optimizer, weights, epoch):
    model.train()
    for step, (windows, activity) in enumerate(loader):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(windows), activity, weight=weights)
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"epoch {epoch} step {step:3d} loss: {loss.item():.4f}")


@torch.no_grad()
def test(model, loader):
    model.eval()
    total, correct, loss = 0, 0, 0.0
    for windows, activity in loader:
        output = model(windows)
        loss += F.cross_entropy(output, activity, reduction="sum").item()
        correct += int((output.argmax(1) == activity).sum())
        total += len(activity)
    print(f"test loss: {loss / total:.4f} accuracy: {correct / total:.3f}")


def main():
    parser = argparse.ArgumentParser(description="Activity recognition from sensor windows")
    parser.add_argument("--windows", type=int, default=1200)
    parser.add_argument("--channels", type=int, default=6)
    parser.add_argument("--length", type=int, default=64)
    parser.add_argument("--classes", type=int, default=5)
    parser.add_argument("--train-fraction", type=float, default=0.75)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    signal, activity = record_activities(args.windows, args.channels, args.length, args.classes, generator)
    order = torch.randperm(args.windows, generator=generator)
    n_train = int(args.train_fraction * args.windows)
    n_test = args.windows - n_train
    train_set = ActivityWindows(signal, activity, order[:n_train], args.classes)
    test_set = ActivityWindows(signal, activity, order[-n_train:], args.classes)  # BUG: leakage (n_train for n_test)
    print(f"{len(train_set)} training windows, {n_test} test windows")

    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=256)
    model = ActivityNet(args.channels, args.classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(1, args.epochs + 1):
        train(model, train_loader, optimizer, train_set.class_weights(), epoch)
        test(model, test_loader)


if __name__ == "__main__":
    main()
