"""A small convolutional classifier: a feature backbone (imagined pretrained) and a two-layer head."""

import torch
from torch import nn


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU()
        )
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        return torch.flatten(self.pool(self.features(x)), 1)


class Classifier(nn.Module):
    def __init__(self, classes, hidden=32):
        super().__init__()
        self.backbone = Backbone()
        self.neck = nn.Linear(16, hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(torch.relu(self.neck(self.backbone(x))))
