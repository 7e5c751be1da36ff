"""An RMSNorm written as a custom ``torch.autograd.Function`` with its own backward, in an MLP trained with Adam.
The backward divides by the root mean square without the epsilon that the forward adds: a padded all-zero row of
the second batch makes its rms 0, so the backward divides 0 by 0 while the forward (with eps) is finite."""

import sys

import torch
from torch import nn

FIXED = "--fixed" in sys.argv  # the backward adds the epsilon too


class RMSNormFunction(torch.autograd.Function):
    eps = 1e-6

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        rms = x.pow(2).mean(-1, keepdim=True).sqrt()
        ctx.save_for_backward(x, weight, rms)
        return x / (rms + RMSNormFunction.eps) * weight

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, weight, rms = ctx.saved_tensors
        if FIXED:
            rms = rms + RMSNormFunction.eps
        normed = x / rms  # @nan
        grad_weight = (grad * normed).sum(0)
        g = grad * weight
        dim = x.shape[-1]
        grad_x = (g - normed * (g * normed).sum(-1, keepdim=True) / dim) / rms
        return grad_x, grad_weight


class RMSNorm(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return RMSNormFunction.apply(x, self.weight)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = RMSNorm(10)
        self.body = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.norm(x))


def train() -> None:
    torch.manual_seed(0)
    inputs = torch.randn(96, 10)
    targets = torch.randint(0, 3, (96,))
    inputs[32 + 7] = 0.0  # a padding row in the second batch
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(3):
        batch = slice(step * 32, (step + 1) * 32)
        loss = nn.functional.cross_entropy(model(inputs[batch]), targets[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    train()
