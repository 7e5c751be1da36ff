"""GAN on sine waves, bug: the discriminator step scores the generated batch without detaching it, so
errD_fake.backward() runs through the generator's graph and frees it; the generator step then backpropagates through
the same `fake`.

Symptom (plain run): RuntimeError "Trying to backward through the graph a second time" at errG.backward() on the
first iteration (and, had it not raised, D's step would also have left gradients in G).
"""

import argparse
import math

import torch
import torch.nn as nn
import torch.optim as optim
from nets import Discriminator, Generator
from torch.utils.data import DataLoader, TensorDataset


def make_waves(n, length=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.linspace(0, 1, length)
    freq = 1 + torch.rand(n, 1, generator=g)
    phase = 2 * math.pi * torch.rand(n, 1, generator=g)
    amp = 0.5 + torch.rand(n, 1, generator=g)
    return amp * torch.sin(2 * math.pi * freq * t + phase)


@torch.no_grad()
def sample_gap(netG, real, nz, n=1000):
    fake = netG(torch.randn(n, nz))
    mean_gap = (fake.mean(0) - real.mean(0)).pow(2).mean()
    std_gap = (fake.std(0) - real.std(0)).pow(2).mean()
    rough_gap = (fake.diff(dim=1).abs().mean() - real.diff(dim=1).abs().mean()).abs()
    return (mean_gap + std_gap + rough_gap).item()


def main():
    parser = argparse.ArgumentParser(description="GAN on 1-D sine waves")
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--nz", type=int, default=16, help="size of the latent vector")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--beta1", type=float, default=0.5)
    args = parser.parse_args()
    torch.manual_seed(0)

    waves = make_waves(4096)
    dataloader = DataLoader(TensorDataset(waves), batch_size=args.batch_size, shuffle=True, drop_last=True)

    netG = Generator(args.nz)
    netD = Discriminator()
    criterion = nn.BCEWithLogitsLoss()
    real_label = 1.0
    fake_label = 0.0
    optimizerD = optim.Adam(netD.parameters(), lr=args.lr, betas=(args.beta1, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=args.lr, betas=(args.beta1, 0.999))

    for epoch in range(args.epochs):
        total_d, total_g, batches = 0.0, 0.0, 0
        for (real,) in dataloader:
            b_size = real.size(0)
            # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
            netD.zero_grad()
            label = torch.full((b_size,), real_label)
            errD_real = criterion(netD(real), label)
            errD_real.backward()
            noise = torch.randn(b_size, args.nz)
            fake = netG(noise)
            label.fill_(fake_label)
            errD_fake = criterion(netD(fake), label)  # BUG: training-logic fake not detached in the D step
            errD_fake.backward()
            errD = errD_real + errD_fake
            optimizerD.step()

            # (2) Update G network: maximize log(D(G(z)))
            netG.zero_grad()
            label.fill_(real_label)  # fake labels are real for generator cost
            errG = criterion(netD(fake), label)
            errG.backward()
            optimizerG.step()

            total_d += errD.item()
            total_g += errG.item()
            batches += 1

        gap = sample_gap(netG, waves, args.nz)
        print(
            f"[{epoch + 1}/{args.epochs}] errD {total_d / batches:.4f} errG {total_g / batches:.4f} "
            f"| sample gap loss: {gap:.4f}"
        )

    print(f"final sample gap: {sample_gap(netG, waves, args.nz, n=4000):.4f}")


if __name__ == "__main__":
    main()
