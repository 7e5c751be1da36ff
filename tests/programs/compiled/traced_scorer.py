"""Traces a small scorer with ``torch.jit.trace`` (checked against a second run, as by default), then fine-tunes
the eager model and scores a held-out batch with the traced one: the way a user ships a model to C++."""

import argparse

import torch
from torch import nn


def build(width: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(6, width), nn.Tanh(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 1))


def train(model: nn.Module, steps: int) -> float:
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(64, 6)
    y = (x[:, :1] * 2 - x[:, 1:2]).tanh()
    loss = torch.zeros(())
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    return float(loss)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = build(args.width)
    print(f"trained loss {train(model, args.steps):.6f}")
    model.eval()
    example = torch.randn(4, 6)
    traced = torch.jit.trace(model, example)
    kinds = [node.kind() for node in traced.inlined_graph.nodes()]
    print(f"traced graph: {len(kinds)} nodes: {' '.join(sorted(set(kinds)))}")
    held_out = torch.randn(8, 6)
    with torch.no_grad():
        print(f"traced score {traced(held_out).sum().item():.6f}")
        print(f"eager score {model(held_out).sum().item():.6f}")


if __name__ == "__main__":
    main()
