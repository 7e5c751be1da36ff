"""A two-level U-Net for 16x16 single-channel images: one logit per pixel for the foreground mask."""

import torch
import torch.nn as nn


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())


class TinyUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.down1 = block(1, 8)
        self.down2 = block(8, 16)
        self.pool = nn.MaxPool2d(2)
        self.up = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.fuse = block(16, 8)
        self.head = nn.Conv2d(8, 1, 1)

    def forward(self, x):
        skip = self.down1(x)
        deep = self.down2(self.pool(skip))
        merged = torch.cat([self.up(deep), skip], dim=1)
        return self.head(self.fuse(merged))
