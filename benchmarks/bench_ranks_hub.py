"""Cost of cross-rank checking in the language server's hub (runtime_view.check_ranks), as ratios in one run.

Every ``scalars`` and ``rank-state`` event of a distributed run now also runs ``check_ranks`` (verdicts with
``core.ranks.classify_ranks``; ``diverging_rank`` once per step that every rank reported). This replays a synthetic
8-rank run (train loss and grad norm per step, a heartbeat per rank every 5 steps, phases per step) into a
``RuntimeView`` and prints:

- events/s through ``apply`` + ``check_ranks`` (as the server does) / through ``apply`` alone: the relative cost;
- microseconds per event against a target of 1 ms per event (8 ranks at 100 steps/s give ~1 600 events/s, so
  below 1.00 means the hub keeps up with room to spare on one core);
- values kept per (rank, metric) after the run / MAX_RANK_STEPS: memory stays bounded (must be 1.00).

Run: ``.venv/bin/python benchmarks/bench_ranks_hub.py [--steps 2000] [--ranks 8] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pyhelpers"))

from tensorsight.server.rank_book import MAX_RANK_STEPS, RANK_METRICS
from tensorsight.server.runtime_view import RuntimeView

TARGET_SECONDS_PER_EVENT = 1e-3
SCRIPT = "/bench/train.py"


def synthetic_run(ranks: int, steps: int) -> list[dict[str, Any]]:
    """The events of a run whose ranks all train alike (deterministic wobble): the common, no-finding case."""
    t0 = 1_000_000.0
    events: list[dict[str, Any]] = []
    for rank in range(ranks):
        events.append({"type": "hello", "pid": 100 + rank, "rank": rank, "script": SCRIPT, "time": t0})
    for step in range(1, steps + 1):
        now = t0 + step * 0.01
        for rank in range(ranks):
            pid = 100 + rank
            seconds = {"forward": 0.003, "backward": 0.006}
            events.append(
                {"type": "phases", "pid": pid, "rank": rank, "step": step, "seconds": seconds, "file": SCRIPT,
                 "line": 20, "time": now}
            )  # fmt: skip
            wobble = 1 + 0.1 * math.sin(step + rank)
            values = {"loss": 2.0 * wobble / math.sqrt(step), "grad_norm": 1.5 * wobble, "lr": 0.1}
            events.append(
                {"type": "scalars", "pid": pid, "rank": rank, "step": step, "split": "train", "values": values,
                 "time": now}
            )  # fmt: skip
            if step % 5 == 0:
                events.append(
                    {"type": "rank-state", "pid": pid, "rank": rank, "world_size": ranks, "state": "running",
                     "since": t0, "heartbeat": 5.0, "step": step, "time": now}
                )  # fmt: skip
    return events


def replay(events: list[dict[str, Any]], check: bool) -> tuple[float, RuntimeView, int]:
    view = RuntimeView()
    view.start_session("bench")
    findings = 0
    started = time.perf_counter()
    for event in events:
        update = view.apply("bench", event)
        if check and update.ranks:
            findings += len(view.check_ranks("bench", float(event["time"])).findings)
    return time.perf_counter() - started, view, findings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    events = synthetic_run(args.ranks, args.steps)
    plain, checked = [], []
    view, findings = RuntimeView(), 0
    for _ in range(args.rounds):  # interleaved, medians: a loaded machine slows both alike
        plain.append(replay(events, check=False)[0])
        seconds, view, findings = replay(events, check=True)
        checked.append(seconds)
    plain_s, checked_s = statistics.median(plain), statistics.median(checked)
    per_event = checked_s / len(events)
    book = view.sessions["bench"].ranks
    kept = max(len(steps) for metric in RANK_METRICS for steps in book.series[metric].values())
    print(f"{args.ranks} ranks x {args.steps} steps = {len(events)} events, {args.rounds} rounds (medians)")
    print(f"apply + check_ranks / apply alone:            {checked_s / plain_s:6.2f}x")
    print(f"per event {per_event * 1e6:7.1f} us / target {TARGET_SECONDS_PER_EVENT * 1e6:.0f} us: "
          f"{per_event / TARGET_SECONDS_PER_EVENT:6.2f}")  # fmt: skip
    print(f"values kept per rank and metric / MAX_RANK_STEPS ({MAX_RANK_STEPS}): {kept / MAX_RANK_STEPS:6.2f}")
    print(f"false findings on ranks that train alike: {findings}")


if __name__ == "__main__":
    main()
