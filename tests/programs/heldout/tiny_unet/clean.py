"""Tiny U-Net segmentation of bright discs (clean): BCE-with-logits plus a soft Dice loss, flips applied to image and
mask together, a validation step every epoch."""

import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from unet import TinyUNet


class DiscDataset(Dataset):
    def __init__(self, n, seed, augment=False):
        g = torch.Generator().manual_seed(seed)
        yy, xx = torch.meshgrid(torch.arange(16.0), torch.arange(16.0), indexing="ij")
        cx, cy = torch.rand(n, 1, 1, generator=g) * 12 + 2, torch.rand(n, 1, 1, generator=g) * 12 + 2
        radius = torch.rand(n, 1, 1, generator=g) * 3 + 1.5
        self.masks = (((xx - cx) ** 2 + (yy - cy) ** 2) < radius**2).float().unsqueeze(1)
        self.images = self.masks * 0.8 + torch.randn(n, 1, 16, 16, generator=g) * 0.5
        self.augment = augment

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        image, mask = self.images[index], self.masks[index]
        if self.augment and torch.rand(1).item() < 0.5:
            image, mask = image.flip(-1), mask.flip(-1)
        return image, mask


def dice_loss(logits, masks, eps=1.0):
    probs = torch.sigmoid(logits)
    inter = (probs * masks).sum(dim=(1, 2, 3))
    union = probs.sum(dim=(1, 2, 3)) + masks.sum(dim=(1, 2, 3))
    return 1 - ((2 * inter + eps) / (union + eps)).mean()


def validate(model, loader):
    model.eval()
    with torch.no_grad():
        losses = [dice_loss(model(x), y).item() for x, y in loader]
    model.train()
    return sum(losses) / len(losses)


def main():
    parser = argparse.ArgumentParser(description="Tiny U-Net")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args()
    torch.manual_seed(0)
    train_loader = DataLoader(DiscDataset(800, seed=1, augment=True), batch_size=32, shuffle=True)
    valid_loader = DataLoader(DiscDataset(160, seed=2), batch_size=80)
    model = TinyUNet()
    bce = nn.BCEWithLogitsLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.8)
    model.train()
    for epoch in range(args.epochs):
        total = 0.0
        for images, masks in train_loader:
            optimizer.zero_grad()
            logits = model(images)
            loss = bce(logits, masks) + dice_loss(logits, masks)
            loss.backward()
            optimizer.step()
            total += loss.item()
        scheduler.step()
        valid_loss = validate(model, valid_loader)
        print(f"epoch {epoch + 1} loss: {total / len(train_loader):.4f} valid dice loss: {valid_loss:.4f}")


if __name__ == "__main__":
    main()
