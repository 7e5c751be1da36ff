"""Cost of the distributed watchdog (tensorsight.agent.distributed.ranks) on a DDP training step, as ratios in one run.

The watchdog is what every torchrun worker runs under TensorSight: a thread that samples the training thread's stack
twice a second and reports running / stopped / waiting. This measures, on a one-rank gloo process group in this
process (DDP and its all-reduce hooks are real; no second process is needed to time a step):

- a DDP step with the watchdog running / the same step without it (interleaved rounds, medians);
- one watchdog tick (stack sample + state bookkeeping + event publish), and its share of one core at two ticks/s.

Run: ``.venv/bin/python benchmarks/bench_rank_watchdog.py [--steps 40] [--rounds 5]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pyhelpers"))

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from tensorsight.agent.distributed.ranks import POLL_SECONDS, RankInfo, RankWatchdog


def make_step() -> tuple[nn.Module, object]:
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs = torch.randn(128, 256, generator=torch.Generator().manual_seed(1))
    targets = torch.randint(0, 10, (128,), generator=torch.Generator().manual_seed(2))

    def step() -> None:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(inputs), targets).backward()
        optimizer.step()

    return model, step


def time_steps(step, count: int) -> float:
    """Median seconds of one step over ``count`` steps."""
    times = []
    for _ in range(count):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        _, step = make_step()
        time_steps(step, 5)  # warm-up
        plain, watched = [], []
        for _ in range(args.rounds):  # interleaved, so drift on a shared machine hits both sides alike
            plain.append(time_steps(step, args.steps))
            watchdog = RankWatchdog(RankInfo(0, 2, 0), heartbeat=5.0, wait_after=2.0)
            watchdog.start()
            watched.append(time_steps(step, args.steps))
            watchdog.stop()
        ticker = RankWatchdog(RankInfo(0, 2, 0), heartbeat=5.0, wait_after=2.0)
        ticks = 2000
        start = time.perf_counter()
        for _ in range(ticks):
            ticker.tick(time.time())
        tick_seconds = (time.perf_counter() - start) / ticks
    finally:
        dist.destroy_process_group()

    base, armed = statistics.median(plain), statistics.median(watched)
    print(f"DDP step (1-rank gloo, MLP 256-512-10, batch 128): {base * 1e3:.2f} ms without the watchdog")
    print(f"step with the watchdog / without: {armed / base:.3f}x")
    print(
        f"one watchdog tick: {tick_seconds * 1e6:.1f} us; share of one core at {1 / POLL_SECONDS:.0f} ticks/s: "
        f"{tick_seconds / POLL_SECONDS * 100:.4f}%"
    )


if __name__ == "__main__":
    main()
