"""What the unattended mode costs: ``python -m tensorsight watch`` against plain ``python`` on the same training loop,
ratios in one run.

    .venv/bin/python benchmarks/bench_watch.py [--rounds 5] [--steps 200] [--python PYTHON]

Each round runs, for each of bench_sentinel.py's three training steps (an MLP, a small CNN, a small transformer,
each with a loss written outside any module and AdamW), one fresh process of the plain loop and one under ``watch``,
in alternating order. The loop reports its own training thread's CPU time for its steps after the first ten (one
intra-op thread), so interpreter start-up and imports are left out and load from other processes cancels out; each
ratio is the median over rounds of (watch / plain in the same round). Target: at most 1.05x. The whole process's wall
time is shown beside it (start-up included: ``watch`` imports the agent before the script).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYHELPERS = os.path.join(ROOT, "pyhelpers")
BENCHMARKS = os.path.join(ROOT, "benchmarks")
WARM_UP_STEPS = 10
TARGET = 1.05

LOOP = """
import sys, time
sys.path.insert(0, {benchmarks!r})
import torch
torch.set_num_threads(1)
torch.manual_seed(0)
from bench_sentinel import {model}, make_step

step = make_step(*{model}())
for _ in range({warm_up}):
    step()
start = time.thread_time()
for _ in range({steps}):
    step()
print("LOOP_SECONDS", time.thread_time() - start, flush=True)
"""


def run_once(python: str, script: str, watched: bool) -> tuple[float, float]:
    """(the loop's CPU seconds, the process's wall seconds) of one fresh run."""
    command = [python, "-m", "tensorsight", "watch", "--wait-timeout", "1", script] if watched else [python, script]
    env = {**os.environ, "PYTHONPATH": PYHELPERS, "OMP_NUM_THREADS": "1"}
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    if "[tensorsight]" in done.stderr and "NaN" in done.stderr:
        raise SystemExit(f"the clean loop reported a NaN under watch:\n{done.stderr[-2000:]}")
    for line in done.stdout.splitlines():
        if line.startswith("LOOP_SECONDS"):
            return float(line.split()[1]), wall
    raise SystemExit(f"no LOOP_SECONDS line from {' '.join(command)}:\n{done.stdout[-2000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--python", default=sys.executable, help="the interpreter (with torch and debugpy) to measure")
    args = parser.parse_args()
    print(f"tensorsight watch vs plain python: {args.steps} steps x {args.rounds} rounds ({args.python})")
    print(f"  {'program':<12} {'plain/step':>11} {'watch/step':>11} {'ratio':>7} {'wall ratio':>11}")
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as folder:
        for model in ("mlp", "cnn", "transformer"):
            script = os.path.join(folder, f"loop_{model}.py")
            with open(script, "w", encoding="utf-8") as handle:
                handle.write(LOOP.format(benchmarks=BENCHMARKS, model=model, warm_up=WARM_UP_STEPS, steps=args.steps))
            ratios, wall_ratios, plain_steps, watch_steps = [], [], [], []
            for round_ in range(args.rounds):
                order = (False, True) if round_ % 2 == 0 else (True, False)
                results = {watched: run_once(args.python, script, watched) for watched in order}
                (plain, plain_wall), (watch, watch_wall) = results[False], results[True]
                ratios.append(watch / plain)
                wall_ratios.append(watch_wall / plain_wall)
                plain_steps.append(plain / args.steps)
                watch_steps.append(watch / args.steps)
            ratio = statistics.median(ratios)
            worst = max(worst, ratio)
            plain_ms, watch_ms = statistics.median(plain_steps) * 1e3, statistics.median(watch_steps) * 1e3
            wall = statistics.median(wall_ratios)
            print(f"  {model:<12} {plain_ms:>9.2f}ms {watch_ms:>9.2f}ms {ratio:>6.3f}x {wall:>10.3f}x")
    print(f"  worst ratio {worst:.3f}x (target <= {TARGET}x): {'ok' if worst <= TARGET else 'OVER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
