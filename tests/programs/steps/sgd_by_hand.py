"""Polynomial regression fitted with a hand-written SGD update (the style of the PyTorch regression example).

No optimizer object: the parameters are updated by hand after ``backward()``. ``--lr`` picks the learning rate; the
default one converges."""

import argparse

import torch
import torch.nn.functional as F

POLY_DEGREE = 4


def make_features(x: torch.Tensor) -> torch.Tensor:
    """Columns [x, x^2, x^3, x^4]."""
    x = x.unsqueeze(1)
    return torch.cat([x**i for i in range(1, POLY_DEGREE + 1)], 1)


def get_batch(w_target: torch.Tensor, b_target: torch.Tensor, generator: torch.Generator, batch_size: int = 32):
    random = torch.randn(batch_size, generator=generator)
    x = make_features(random)
    y = x.mm(w_target) + b_target.item()
    return x, y


def train(fc: torch.nn.Module, w_target, b_target, generator, lr: float, steps: int) -> float:
    loss = torch.tensor(0.0)
    for _ in range(steps):
        batch_x, batch_y = get_batch(w_target, b_target, generator)
        fc.zero_grad()
        output = F.smooth_l1_loss(fc(batch_x), batch_y)
        loss = output
        output.backward()
        for param in fc.parameters():
            param.data.add_(-lr * param.grad)
    return loss.item()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--epochs", type=int, default=6)
    args = parser.parse_args()
    generator = torch.Generator().manual_seed(0)
    w_target = torch.randn(POLY_DEGREE, 1, generator=generator) * 0.5
    b_target = torch.randn(1, generator=generator) * 0.5
    torch.manual_seed(0)
    fc = torch.nn.Linear(w_target.size(0), 1)
    for epoch in range(1, args.epochs + 1):
        loss = train(fc, w_target, b_target, generator, args.lr, steps=20)
        print(f"epoch {epoch} loss {loss:.4g}")


if __name__ == "__main__":
    main()
