"""Binary segmentation trained with a loss class from its own module (``losses.FocalDiceLoss``). The loss is checked
before training starts on an all-background batch with the model's logits pushed far negative: the Dice term
divides 0 by 0 (``smooth=0``), the program sees the NaN and exits before any backward()."""

import argparse
import sys

import torch
from losses import FocalDiceLoss
from torch import nn


class TinySegNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x).squeeze(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--fixed", action="store_true", help="a smoothed Dice term")
    args = parser.parse_args()
    torch.manual_seed(0)
    criterion = FocalDiceLoss(gamma=2.0, smooth=1.0 if args.fixed else 0.0)
    images = torch.rand(16, 1, 12, 12)
    masks = (images > 0.7).float()
    masks[:8] = 0.0  # background-only crops
    logits = torch.full((8, 12, 12), -200.0)
    sanity = criterion(logits, masks[:8, 0])
    if torch.isnan(sanity) or torch.isinf(sanity):
        print("loss sanity check failed:", sanity.item())
        sys.exit(2)
    model = TinySegNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(args.steps):
        loss = criterion(model(images), masks[:, 0])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
