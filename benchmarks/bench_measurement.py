"""Cost of armed measurement per training step on CPU reference models (target: ≤ 1.10× an unarmed step).

    .venv/bin/python benchmarks/bench_measurement.py [--threads N] [--rounds R]

Armed = what ``measure: true`` installs: the phase clock (global module forward hooks, DataLoader/backward wrappers,
optimizer step hooks), scalars every step (loss, lr, fused gradient norms per parameter), histograms every 100 steps,
memory figures and the retained-graph scan every step, and a listener consuming every event (as the doctor or the
hub client would). Each model's unarmed and armed steps alternate in blocks within one process, so machine load
hits both alike; a model's ratio is the median armed block over the median unarmed block. Time is this process's CPU
time (the agent's cost is CPU work; wall time on a shared machine mostly measures the neighbours). Batches come from
a DataLoader over in-memory tensors, like a real loop. One thread by default, for the same reason.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "pyhelpers"))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from tensorsight.agent.measurement.pipeline import Measurement, MeasureSettings  # noqa: E402
from tensorsight.agent.runtime import events, steps  # noqa: E402

TARGET = 1.10


def mlp() -> tuple[nn.Module, TensorDataset, int]:
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    data = TensorDataset(torch.randn(4096, 784), torch.randint(0, 10, (4096,)))
    return model, data, 128


def cnn() -> tuple[nn.Module, TensorDataset, int]:
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(64 * 8 * 8, 10),
    )
    data = TensorDataset(torch.randn(1024, 3, 32, 32), torch.randint(0, 10, (1024,)))
    return model, data, 32


class TinyTransformer(nn.Module):
    def __init__(self, vocab: int = 1000, width: int = 128, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        block = nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=256, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(block, num_layers=layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(tokens))).transpose(1, 2)


def transformer() -> tuple[nn.Module, TensorDataset, int]:
    tokens = torch.randint(0, 1000, (512, 65))
    return TinyTransformer(), TensorDataset(tokens[:, :-1], tokens[:, 1:]), 16


def make_loop(model: nn.Module, data: TensorDataset, batch: int):
    loader = DataLoader(data, batch_size=batch, shuffle=True, drop_last=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()
    batches = iter(())

    def run(count: int) -> float:
        nonlocal batches
        start = time.process_time()
        done = 0
        while done < count:
            for x, y in batches:
                optimizer.zero_grad(set_to_none=True)
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                done += 1
                if done == count:
                    break
            else:
                batches = iter(loader)
        return (time.process_time() - start) / count

    return run


def bench(name: str, factory, rounds: int, block: int, settings: MeasureSettings) -> float:
    torch.manual_seed(0)
    model, data, batch = factory()
    run = make_loop(model, data, batch)
    run(5)  # warm-up: allocator, lazy init
    plain, armed = [], []
    for _ in range(rounds):
        plain.append(run(block))
        measurement = Measurement(torch, settings)
        measurement.start()
        try:
            armed.append(run(block))
        finally:
            measurement.stop()
    base, with_agent = statistics.median(plain), statistics.median(armed)
    ratio = with_agent / base
    verdict = "ok" if ratio <= TARGET else "OVER"
    print(
        f"{name:<12} unarmed {base * 1e3:8.2f} ms/step   armed {with_agent * 1e3:8.2f} ms/step   "
        f"ratio {ratio:5.3f}×  {verdict}"
    )
    return ratio


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--block", type=int, default=25, help="steps per timed block")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    steps.arm("benchmark")  # the shared step counter is on in both arms (every agent feature relies on it)
    counted = []
    events.subscribe(lambda event: counted.append(event["type"]))
    settings = MeasureSettings(phases=True, scalars_every=1, histogram_every=100, memory=True)
    print(f"armed measurement vs unarmed, torch {torch.__version__}, {args.threads} thread(s), target ≤ {TARGET}×")
    ratios = [
        bench("MLP", mlp, args.rounds, args.block, settings),
        bench("small CNN", cnn, args.rounds, args.block, settings),
        bench("transformer", transformer, args.rounds, args.block, settings),
    ]
    histograms = sum(1 for kind in counted if kind == "histogram")
    print(f"events seen: {len(counted)} ({histograms} histogram); worst ratio {max(ratios):.3f}×")
    return 0 if max(ratios) <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
