"""Curve fitting with L-BFGS and a closure (the structure of the PyTorch time-sequence-prediction example).

``optimizer.step(closure)`` evaluates the model and its loss several times per step."""

import argparse

import torch
import torch.nn as nn


class Curve(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=25)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.linspace(-2, 2, 64).unsqueeze(1)
    y = torch.sin(2 * x) + 0.05 * torch.randn_like(x)
    model = Curve()
    criterion = nn.MSELoss()
    optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=5)
    for i in range(args.steps):

        def closure():
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            return loss

        loss = optimizer.step(closure)
        if i % 5 == 0:
            print(f"step {i} loss {loss.item():.5f}")


if __name__ == "__main__":
    main()
