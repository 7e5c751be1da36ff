"""A small DCGAN-style loop (batch norm in both networks): nothing here is evaluation in training mode.

The discriminator step scores ``fake.detach()``, the generator step backpropagates through ``fake``; every few
iterations the generator draws samples from fixed noise for a snapshot, with and without ``no_grad`` as the
PyTorch DCGAN example and tutorial do.
"""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def generator(latent):
    return nn.Sequential(nn.Linear(latent, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 8), nn.Tanh())


def discriminator():
    return nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.LeakyReLU(0.2), nn.Linear(32, 1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--latent", type=int, default=4)
    args = parser.parse_args()
    torch.manual_seed(0)
    data = torch.tanh(torch.randn(640, 8) * 0.5 + 0.3)
    dataloader = DataLoader(TensorDataset(data), batch_size=32, shuffle=True)
    netG, netD = generator(args.latent), discriminator()
    criterion = nn.BCEWithLogitsLoss()
    optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
    fixed_noise = torch.randn(16, args.latent)
    snapshots = []
    for epoch in range(args.epochs):
        for i, (real,) in enumerate(dataloader):
            netD.zero_grad()
            errD_real = criterion(netD(real), torch.ones(real.size(0), 1))
            errD_real.backward()
            fake = netG(torch.randn(real.size(0), args.latent))
            errD_fake = criterion(netD(fake.detach()), torch.zeros(real.size(0), 1))
            errD_fake.backward()
            optimizerD.step()

            netG.zero_grad()
            errG = criterion(netD(fake), torch.ones(real.size(0), 1))
            errG.backward()
            optimizerG.step()
            if i % 5 == 0:
                snapshots.append(netG(fixed_noise).detach())
                with torch.no_grad():
                    snapshots.append(netG(fixed_noise).cpu())
        print(f"epoch {epoch}: loss D {(errD_real + errD_fake).item():.3f} loss G {errG.item():.3f}")


if __name__ == "__main__":
    main()
