"""Generator and discriminator MLPs for a GAN on a 2-D ring of Gaussians."""

import math

import torch
from torch import nn


def ring_of_gaussians(n, modes, generator, radius=2.0, std=0.05):
    angles = torch.randint(0, modes, (n,), generator=generator).float() * (2 * math.pi / modes)
    centers = torch.stack([radius * torch.cos(angles), radius * torch.sin(angles)], dim=1)
    return centers + std * torch.randn(n, 2, generator=generator)


class Generator(nn.Module):
    def __init__(self, latent, hidden):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 2)
        )

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(2, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, 1)
        )

    def forward(self, x):
        return self.net(x)
