"""A training script for Step Into: the breakpoint sits on ``model(x)``; Step Into should land on the first line of
the model's ``forward`` (with ``justMyCode``), not in torch's ``Module.__call__``."""

import argparse

import torch
import torch.nn.functional as F
from torch import nn


class TwoLayer(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.hidden = nn.Linear(features, 8)
        self.out = nn.Linear(8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.hidden(x))  # @bp forward
        return self.out(h).squeeze(-1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = TwoLayer(4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 4), torch.randn(16)
    for step in range(args.steps):
        opt.zero_grad()
        pred = model(x)  # @bp call
        loss = F.mse_loss(pred, y)
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
