"""Trains a regressor compiled whole (``torch.compile(..., fullgraph=True)``) with a TorchScript loss and a compiled
gradient clipping step, and prints what the compiler captured through a backend of its own (the way users check for
graph breaks): the graphs, their operators, and how many graphs Dynamo made in all."""

import argparse

import torch
from torch import nn

captured: list[list[str]] = []


def recording_backend(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]):
    calls = [node.target for node in gm.graph.nodes if node.op in ("call_function", "call_method")]
    captured.append([getattr(target, "__name__", str(target)) for target in calls])
    return gm.forward


class Regressor(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x).squeeze(-1)


@torch.jit.script
def huber(pred: torch.Tensor, target: torch.Tensor, delta: float = 1.0) -> torch.Tensor:
    err = (pred - target).abs()
    return torch.where(err < delta, 0.5 * err**2, delta * (err - 0.5 * delta)).mean()


@torch.compile(backend="eager", fullgraph=True)
def clipped_norm(parameters: list[torch.Tensor], max_norm: float) -> torch.Tensor:
    return nn.utils.clip_grad_norm_(parameters, max_norm)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--backend", default="record", choices=["record", "eager"])
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Regressor(8)
    backend = recording_backend if args.backend == "record" else "eager"
    compiled = torch.compile(model, backend=backend, fullgraph=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(32, 8)
    y = x.sum(dim=1)
    for step in range(args.steps):
        opt.zero_grad()
        loss = huber(compiled(x), y)
        loss.backward()
        norm = clipped_norm(list(model.parameters()), 5.0)
        opt.step()
        print(f"step {step} loss {loss.item():.6f} grad norm {norm.item():.4f}")
    with torch.no_grad():
        print(f"eval loss {huber(compiled(x), y).item():.6f}")
    for index, graph in enumerate(captured):
        print(f"graph {index}: {len(graph)} calls: {' '.join(graph)}")
    from torch._dynamo.utils import counters

    print(f"dynamo graphs {counters['stats']['unique_graphs']}")


if __name__ == "__main__":
    main()
