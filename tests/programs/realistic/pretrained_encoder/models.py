"""An MLP encoder shared by a reconstruction model (pretraining) and a classifier (fine-tuning on few labels)."""

from torch import nn


def make_encoder(features=20, code=8):
    return nn.Sequential(nn.Linear(features, 32), nn.ReLU(), nn.Linear(32, code), nn.ReLU())


class Reconstructor(nn.Module):
    def __init__(self, features=20, code=8):
        super().__init__()
        self.encoder = make_encoder(features, code)
        self.decoder = nn.Linear(code, features)

    def forward(self, x):
        return self.decoder(self.encoder(x))


class Classifier(nn.Module):
    def __init__(self, features=20, code=8, classes=3):
        super().__init__()
        self.encoder = make_encoder(features, code)
        self.head = nn.Linear(code, classes)

    def forward(self, x):
        return self.head(self.encoder(x))
