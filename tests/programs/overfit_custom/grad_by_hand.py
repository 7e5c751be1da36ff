"""A regression step that takes its gradients with torch.autograd.grad and writes them into .grad by hand (as
gradient-penalty and meta-learning code does) before optimizer.step(): no loss.backward() anywhere."""

import argparse

import torch
from torch import nn


def main():
    parser = argparse.ArgumentParser(description="hand-written gradients")
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(64, 8)
    y = x.sum(dim=1, keepdim=True)
    params = list(model.parameters())
    for step in range(args.steps):
        loss = (model(x) - y).pow(2).mean()
        grads = torch.autograd.grad(loss, params)
        for param, grad in zip(params, grads, strict=True):
            param.grad = grad
        optimizer.step()
        if step % 5 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
