"""Generator and discriminator for the sine-wave GAN: small MLPs over 32-sample signals. The discriminator outputs
probabilities."""

import torch.nn as nn


class Generator(nn.Module):
    def __init__(self, nz=16, length=32, hidden=128):
        super().__init__()
        self.main = nn.Sequential(
            nn.Linear(nz, hidden),
            nn.ReLU(True),
            nn.Linear(hidden, hidden),
            nn.ReLU(True),
            nn.Linear(hidden, length),
        )

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, length=32, hidden=128):
        super().__init__()
        self.main = nn.Sequential(
            nn.Linear(length, hidden),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(hidden, hidden),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(hidden, 1),
            nn.Sigmoid(),  # BUG: training-logic|dynamics sigmoid before BCEWithLogitsLoss
        )

    def forward(self, x):
        return self.main(x).view(-1)
