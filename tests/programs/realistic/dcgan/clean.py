"""DCGAN on synthetic 8x8 images of a bright blob at a random place.

Two networks, two Adam optimizers, two backward passes per step (the discriminator on real and on detached fake
images, then the generator through the discriminator). Adversarial losses oscillate by nature; what should fall is
how far the generated images' mean is from the real images' mean, printed per epoch as the "moment loss".
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset


def blob_images(count, seed):
    """Images in [-1, 1]: a Gaussian bump of fixed width centred on a random pixel of the middle region."""
    generator = torch.Generator().manual_seed(seed)
    centres = torch.randint(2, 6, (count, 2), generator=generator).float()
    grid = torch.arange(8).float()
    dy = (grid.view(1, 8, 1) - centres[:, 0].view(-1, 1, 1)) ** 2
    dx = (grid.view(1, 1, 8) - centres[:, 1].view(-1, 1, 1)) ** 2
    images = torch.exp(-(dx + dy) / 2.0) * 2 - 1
    return TensorDataset(images.unsqueeze(1))


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


class Generator(nn.Module):
    def __init__(self, nz, ngf):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf, 1, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self, ndf):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(1, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input).view(-1)


def train(args, netG, netD, device, dataloader, optimizerD, optimizerG, epoch):
    real_label, fake_label = 1.0, 0.0
    for i, (real,) in enumerate(dataloader):
        # (1) Update D: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        real = real.to(device)
        batch_size = real.size(0)
        label = torch.full((batch_size,), real_label, device=device)
        output = netD(real)
        errD_real = F.binary_cross_entropy(output, label)
        errD_real.backward()
        D_x = output.mean().item()

        noise = torch.randn(batch_size, args.nz, 1, 1, device=device)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = F.binary_cross_entropy(output, label)
        errD_fake.backward()
        D_G_z1 = output.mean().item()
        errD = errD_real + errD_fake
        optimizerD.step()

        # (2) Update G: maximize log(D(G(z)))
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake)
        errG = F.binary_cross_entropy(output, label)
        errG.backward()
        D_G_z2 = output.mean().item()
        optimizerG.step()

        if i % args.log_interval == 0:
            print(
                f"[{epoch}/{args.epochs}][{i}/{len(dataloader)}] Loss_D: {errD.item():.4f} Loss_G: {errG.item():.4f} "
                f"D(x): {D_x:.4f} D(G(z)): {D_G_z1:.4f} / {D_G_z2:.4f}"
            )


def moment_loss(netG, device, real_images, nz):
    """Squared distance between the mean generated image and the mean real image."""
    with torch.no_grad():
        fake = netG(torch.randn(len(real_images), nz, 1, 1, device=device))
    return F.mse_loss(fake.mean(0), real_images.to(device).mean(0)).item()


def main():
    parser = argparse.ArgumentParser(description="DCGAN on synthetic blob images")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--nz", type=int, default=8)
    parser.add_argument("--ngf", type=int, default=32)
    parser.add_argument("--ndf", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--beta1", type=float, default=0.5)
    parser.add_argument("--log-interval", type=int, default=8)
    parser.add_argument("--seed", type=int, default=999)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dataset = blob_images(1024, seed=1)
    dataloader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True)

    netG = Generator(args.nz, args.ngf).to(device)
    netG.apply(weights_init)
    netD = Discriminator(args.ndf).to(device)
    netD.apply(weights_init)
    optimizerD = optim.Adam(netD.parameters(), lr=args.lr, betas=(args.beta1, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=args.lr, betas=(args.beta1, 0.999))

    real_images = dataset.tensors[0][:256]
    print(f"epoch 0: moment loss: {moment_loss(netG, device, real_images, args.nz):.5f}")
    for epoch in range(1, args.epochs + 1):
        train(args, netG, netD, device, dataloader, optimizerD, optimizerG, epoch)
        print(f"epoch {epoch}: moment loss: {moment_loss(netG, device, real_images, args.nz):.5f}")


if __name__ == "__main__":
    main()
