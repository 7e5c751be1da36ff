"""Cost of View Tensor's payload (agent/display/viewer.py), as a ratio against one ``x.sum()`` in the same run.

    .venv/bin/python benchmarks/bench_viewer.py [--sizes 1000000 100000000] [--rounds 3]

For each size, a float32 CPU tensor, 1-D (the line) and 2-D (the pooled heatmap), each with one NaN: the best of
``--rounds`` timings of ``view_json(x)`` (payload and JSON text) over the best of one ``x.sum()`` measured in the
same run, cold (the stats cache cleared first: the exact counts and moments computed) and warm (the figures from the
cache the Variables view shares, as when the tensor was already summarised at the stop), the payload size, and
whether the histogram was sampled or the answer partial (past the 1 s budget). Timings are best-of, since other
work on the machine only ever adds time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "pyhelpers"))


def best_time(fn: Callable[[], Any], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 100_000_000])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import torch

    from tensorsight.agent.display.reading import CACHE
    from tensorsight.agent.display.viewer import view_json

    results = []
    for size in args.sizes:
        side = math.isqrt(size)
        for shape in ((size,), (side, size // side)):
            x = torch.randn(*shape)
            x.view(-1)[size // 3] = float("nan")
            summed = best_time(lambda x=x: x.sum(), args.rounds)
            cold = best_time(lambda x=x: (CACHE.clear(), view_json(x)), args.rounds)
            warm = best_time(lambda x=x: view_json(x), args.rounds)
            payload = json.loads(view_json(x))
            results.append(
                {
                    "shape": list(shape),
                    "sum_s": round(summed, 5),
                    "view_s": round(cold, 4),
                    "ratio": round(cold / summed, 1),
                    "cached_view_s": round(warm, 4),
                    "cached_ratio": round(warm / summed, 1),
                    "payload_bytes": len(view_json(x)),
                    "sampled_histogram": bool(payload["histogram"].get("sampled")),
                    "partial": bool(payload.get("partial")),
                }
            )
            print(json.dumps(results[-1]), flush=True)


if __name__ == "__main__":
    main()
