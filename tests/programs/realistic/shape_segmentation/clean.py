"""Box segmentation with a small fully convolutional net (clean): a shuffled split of one pool into training and
validation samples, random horizontal flips of image and mask together, BCE-with-logits, per-epoch validation loss.
Many validation masks equal training masks (boxes on a coarse grid); their images differ, so no sample is shared."""

import argparse

import numpy as np
import torch
import torch.nn as nn
from shapes import BoxSegmentation, make_pool
from torch.utils.data import DataLoader


def make_net(width=16):
    return nn.Sequential(
        nn.Conv2d(1, width, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(width, width, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(width, 1, 1),
    )


def train_one_epoch(net, loader, optimizer, criterion):
    net.train()
    running = 0.0
    for images, masks in loader:
        optimizer.zero_grad()
        loss = criterion(net(images), masks)
        loss.backward()
        optimizer.step()
        running += loss.item()
    return running / len(loader)


@torch.no_grad()
def validate(net, loader, criterion):
    net.eval()
    return sum(criterion(net(x), y).item() for x, y in loader) / len(loader)


def main():
    parser = argparse.ArgumentParser(description="box segmentation")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args()
    torch.manual_seed(0)

    images, masks = make_pool()
    order = np.random.default_rng(0).permutation(len(images))
    train_idx, val_idx = order[:1000], order[1000:]
    train_set = BoxSegmentation(images[train_idx], masks[train_idx], augment=True)
    train_loader = DataLoader(train_set, batch_size=50, shuffle=True)
    val_loader = DataLoader(BoxSegmentation(images[val_idx], masks[val_idx]), batch_size=100)

    net = make_net()
    optimizer = torch.optim.Adam(net.parameters(), lr=args.lr)
    criterion = nn.BCEWithLogitsLoss()
    for epoch in range(args.epochs):
        loss = train_one_epoch(net, train_loader, optimizer, criterion)
        print(f"epoch {epoch + 1} loss: {loss:.4f} val loss: {validate(net, val_loader, criterion):.4f}")


if __name__ == "__main__":
    main()
