"""Trains a small classifier, exports it with ``torch.export`` and prints the exported graph's operators, then
checks the exported program against the eager model: the way a user prepares a model for deployment."""

import argparse

import torch
import torch.nn.functional as F
from torch import nn


class Classifier(nn.Module):
    def __init__(self, features: int, classes: int) -> None:
        super().__init__()
        self.hidden = nn.Linear(features, 32)
        self.out = nn.Linear(32, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(F.gelu(self.hidden(x))).log_softmax(dim=-1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Classifier(10, 4)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x, y = torch.randn(128, 10), torch.randint(0, 4, (128,))
    for epoch in range(args.epochs):
        opt.zero_grad()
        loss = F.nll_loss(model(x), y)
        loss.backward()
        opt.step()
        print(f"epoch {epoch} loss {loss.item():.6f}")
    model.eval()
    exported = torch.export.export(model, (torch.randn(2, 10),))
    calls = [str(node.target) for node in exported.graph_module.graph.nodes if node.op == "call_function"]
    print(f"exported graph: {len(exported.graph_module.graph.nodes)} nodes")
    print("operators: " + " ".join(calls))
    sample = torch.randn(2, 10)
    with torch.no_grad():
        same = torch.allclose(exported.module()(sample), model(sample), atol=1e-6)
    print(f"exported matches eager: {same}")


if __name__ == "__main__":
    main()
