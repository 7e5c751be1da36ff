"""A GAN on a 2-D ring of Gaussians with two Adam optimizers, one per network (the DCGAN example's loop on MLPs).

The discriminator step scores ``netD(fake)`` without ``.detach()``: its backward frees the generator's graph, and the
generator step's backward walks it again, so PyTorch raises "Trying to backward through the graph a second time".
"""

import argparse

import torch
import torch.nn.functional as F
from models import Discriminator, Generator, ring_of_gaussians


def radius_error(netG, noise):
    """How far the samples are from the ring (radius 2): the number that shows the generator learns."""
    with torch.no_grad():
        return abs(netG(noise).norm(dim=1).mean().item() - 2.0)


def train(args, netG, netD, optimizerG, optimizerD, generator):
    fixed_noise = torch.randn(512, args.latent, generator=generator)
    for step in range(1, args.steps + 1):
        real = ring_of_gaussians(args.batch_size, 8, generator)
        noise = torch.randn(args.batch_size, args.latent, generator=generator)
        ones = torch.ones(args.batch_size, 1)
        zeros = torch.zeros(args.batch_size, 1)

        # (1) update D: maximise log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        errD_real = F.binary_cross_entropy_with_logits(netD(real), ones)
        fake = netG(noise)
        errD_fake = F.binary_cross_entropy_with_logits(netD(fake), zeros)  # BUG: training-logic fake not detached
        errD = errD_real + errD_fake
        errD.backward()
        optimizerD.step()

        # (2) update G: maximise log(D(G(z)))
        netG.zero_grad()
        errG = F.binary_cross_entropy_with_logits(netD(fake), ones)
        errG.backward()
        optimizerG.step()
        if step % args.log_every == 0:
            error = radius_error(netG, fixed_noise)
            print(f"step {step}: loss_D {errD.item():.4f} loss_G {errG.item():.4f} ring loss: {error:.4f}")


def main():
    parser = argparse.ArgumentParser(description="GAN on a ring of Gaussians")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--latent", type=int, default=8)
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--log-every", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    netG = Generator(args.latent, 64)
    netD = Discriminator(64)
    optimizerD = torch.optim.Adam(netD.parameters(), lr=args.lr, betas=(0.5, 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=args.lr, betas=(0.5, 0.999))
    print(f"initial ring loss: {radius_error(netG, torch.randn(512, args.latent, generator=generator)):.4f}")
    train(args, netG, netD, optimizerG, optimizerD, generator)


if __name__ == "__main__":
    main()
