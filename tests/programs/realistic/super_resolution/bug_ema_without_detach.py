"""Super-resolution with a weight EMA updated from the live parameters: `.detach()` was forgotten.

`decay * ema + (1 - decay) * param` records an autograd node per parameter per step and chains it to the previous
average, so every EMA tensor keeps the graph of all earlier updates: memory grows step after step.
"""

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 5, 1, 2)
        self.conv2 = nn.Conv2d(16, 16, 3, 1, 1)
        self.conv3 = nn.Conv2d(16, upscale_factor**2, 3, 1, 1)
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

    def forward(self, x):
        x = torch.tanh(self.conv1(x))
        x = torch.tanh(self.conv2(x))
        return self.pixel_shuffle(self.conv3(x))


def smooth_images(count, seed, size=16):
    """Sums of three random low-frequency sinusoids; inputs are their 2x average-pooled versions."""
    generator = torch.Generator().manual_seed(seed)
    grid = torch.linspace(0, 2 * math.pi, size)
    yy, xx = torch.meshgrid(grid, grid, indexing="ij")
    freqs = torch.rand(count, 3, 2, generator=generator) * 1.5 + 0.5
    phases = torch.rand(count, 3, generator=generator) * 2 * math.pi
    waves = torch.sin(freqs[..., 0, None, None] * xx + freqs[..., 1, None, None] * yy + phases[..., None, None])
    targets = (waves.mean(1, keepdim=True) + 1) / 2
    inputs = F.avg_pool2d(targets, 2)
    return TensorDataset(inputs, targets)


def update_ema(ema, model, decay):
    for name, param in model.named_parameters():
        ema[name] = decay * ema[name] + (1 - decay) * param  # BUG: memory (chains a graph over every step)


def train(args, model, ema, device, loader, optimizer, epoch):
    model.train()
    epoch_loss = 0.0
    for inputs, target in loader:
        inputs, target = inputs.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.mse_loss(model(inputs), target)
        loss.backward()
        optimizer.step()
        update_ema(ema, model, args.ema_decay)
        epoch_loss += loss.item()
    print(f"===> Epoch {epoch} Complete: Avg. loss: {epoch_loss / len(loader):.5f}")


def test(model, device, loader, label="model"):
    model.eval()
    avg_psnr, avg_mse = 0.0, 0.0
    with torch.no_grad():
        for inputs, target in loader:
            inputs, target = inputs.to(device), target.to(device)
            mse = F.mse_loss(model(inputs), target)
            avg_psnr += 10 * math.log10(1 / mse.item())
            avg_mse += mse.item()
    print(f"===> {label}: Avg. PSNR: {avg_psnr / len(loader):.2f} dB (test loss: {avg_mse / len(loader):.5f})")


def main():
    parser = argparse.ArgumentParser(description="super-resolution on synthetic images")
    parser.add_argument("--upscale-factor", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--test-batch-size", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--train-images", type=int, default=256)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--ema-decay", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=123)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_loader = DataLoader(smooth_images(args.train_images, seed=1), batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(smooth_images(128, seed=2), batch_size=args.test_batch_size)

    model = Net(upscale_factor=args.upscale_factor).to(device)
    ema = {name: param.detach().clone() for name, param in model.named_parameters()}
    ema_model = Net(upscale_factor=args.upscale_factor).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2], gamma=0.3)
    for epoch in range(1, args.epochs + 1):
        train(args, model, ema, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)
        scheduler.step()
    ema_model.load_state_dict(ema)
    test(ema_model, device, test_loader, label="EMA weights")


if __name__ == "__main__":
    main()
