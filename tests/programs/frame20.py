"""Debuggee for benchmarks/bench_summary.py: a frame holding 20 large tensors, paused once per round.

Each round makes new tensors, so every pause is a cold Variables request (nothing cached). Size from argv:
elements per tensor (default 1,000,000 float32 = 4 MB each).
"""

import sys

import torch

elements = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
rows = max(1, elements // 1000)
generator = torch.Generator().manual_seed(0)
for round_number in range(rounds):
    t00, t01, t02, t03, t04, t05, t06, t07, t08, t09 = (torch.randn(rows, 1000, generator=generator) for _ in range(10))
    t10, t11, t12, t13, t14, t15, t16, t17, t18, t19 = (torch.randn(rows, 1000, generator=generator) for _ in range(10))
    print(f"round {round_number}")  # @bp
