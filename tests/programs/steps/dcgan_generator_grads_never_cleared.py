"""Bug variant of dcgan.py: the generator's gradients are never cleared (``netG.zero_grad()`` is missing; the
``netD.zero_grad()`` of the same loop clears only the discriminator). A DCGAN-style generator and discriminator trained
in turn (the structure of the PyTorch dcgan example), on tiny 8x8 synthetic images made in code.

Two optimizers: each iteration updates D on real and fake batches (two backward() calls), then G through D."""

import argparse

import torch
import torch.nn as nn
import torch.optim as optim

NZ = 8


class Generator(nn.Module):
    def __init__(self, ngf: int = 8) -> None:
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(NZ, ngf * 2, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, 1, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, ndf: int = 8) -> None:
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(1, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, x):
        return self.main(x).view(-1, 1).squeeze(1)


def real_images(batch_size: int, generator: torch.Generator) -> torch.Tensor:
    """Blobs at random places: something with structure for D to tell apart from G's first attempts."""
    grid = torch.linspace(-1, 1, 8)
    centre = torch.rand(batch_size, 2, generator=generator) * 1.4 - 0.7
    dist = (grid.view(1, 8, 1) - centre[:, 0].view(-1, 1, 1)) ** 2 + (
        grid.view(1, 1, 8) - centre[:, 1].view(-1, 1, 1)
    ) ** 2
    return (torch.exp(-dist * 6.0) * 2 - 1).unsqueeze(1)


def weights_init(m: nn.Module) -> None:
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


def train(netG, netD, optimizerG, optimizerD, criterion, args, generator) -> tuple[float, float]:
    real_label, fake_label = 1.0, 0.0
    errD = errG = torch.tensor(0.0)
    for _ in range(args.iterations):
        # (1) Update D: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        real = real_images(args.batch_size, generator)
        label = torch.full((args.batch_size,), real_label)
        errD_real = criterion(netD(real), label)
        errD_real.backward()
        noise = torch.randn(args.batch_size, NZ, 1, 1, generator=generator)
        fake = netG(noise)
        label.fill_(fake_label)
        errD_fake = criterion(netD(fake.detach()), label)
        errD_fake.backward()
        errD = errD_real + errD_fake
        optimizerD.step()
        # (2) Update G: maximize log(D(G(z)))
        # (netG.zero_grad() forgotten: netD.zero_grad() above clears only D)
        label.fill_(real_label)
        errG = criterion(netD(fake), label)
        errG.backward()
        optimizerG.step()  # BUG: training-logic
    return errD.item(), errG.item()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=15)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.0002)
    args = parser.parse_args()
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    netG, netD = Generator(), Discriminator()
    netG.apply(weights_init)
    netD.apply(weights_init)
    criterion = nn.BCELoss()
    optimizerD = optim.Adam(netD.parameters(), lr=args.lr, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=args.lr, betas=(0.5, 0.999))
    for epoch in range(1, args.epochs + 1):
        loss_d, loss_g = train(netG, netD, optimizerG, optimizerD, criterion, args, generator)
        print(f"[{epoch}/{args.epochs}] Loss_D: {loss_d:.4f} Loss_G: {loss_g:.4f}")


if __name__ == "__main__":
    main()
