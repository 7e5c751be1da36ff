"""A classifier compiled without ``fullgraph``: its forward logs a statistic with ``.item()`` (a graph break), the
loop trains for a few epochs and evaluates after each; at the end the program prints Dynamo's own counters (frames
compiled, graphs, recompilations), the way users look for recompiles."""

import argparse

import torch
import torch.nn.functional as F
from torch import nn


class Classifier(nn.Module):
    def __init__(self, features: int, classes: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(features, 32)
        self.fc2 = nn.Linear(32, classes)
        self.peak = 0.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.fc1(x))
        self.peak = max(self.peak, h.max().item())  # a graph break
        return self.fc2(h)


def evaluate(model: nn.Module, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> float:
    correct = 0
    with torch.no_grad():
        for x, y in batches:
            correct += int((model(x).argmax(dim=1) == y).sum())
    return correct / sum(len(y) for _, y in batches)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    net = Classifier(8, 3)
    model = torch.compile(net, backend="eager")
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    train = [(torch.randn(16, 8), torch.randint(0, 3, (16,))) for _ in range(8)]
    valid = [(torch.randn(16, 8), torch.randint(0, 3, (16,))) for _ in range(2)]
    for epoch in range(args.epochs):
        net.train()
        total = 0.0
        for x, y in train:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            total += loss.item()
        net.eval()
        print(f"epoch {epoch} loss {total / len(train):.5f} accuracy {evaluate(model, valid):.3f}")
    print(f"peak activation {net.peak:.4f}")
    from torch._dynamo.utils import counters

    frames = dict(counters["frames"])
    print(f"dynamo frames {frames.get('total', 0)} ok {frames.get('ok', 0)}")
    print(f"dynamo graphs {counters['stats']['unique_graphs']}")
    print(f"dynamo recompiles {sum(counters['recompiles'].values())}")


if __name__ == "__main__":
    main()
