"""Benchmark: leakage checks on 1e6 rows, and the observers' cost per training step. Prints ratios in one run.

    .venv/bin/python benchmarks/bench_leakage.py [--rows 1000000]

1. ``check_splits`` (duplicates by vectorised row hashing, label checks) on a 1e6 x 16 float32 training split and a
   2e5-row test split, against a naive baseline (a Python set of row tuples): seconds and the speed-up. Target: a
   few seconds at most.
2. The same on pandas DataFrames with an id and a date column (id overlap, temporal order, row hashes).
3. The observers (option observeShapes) on an MLP and a small CNN training step: the step time inside an
   observation window and after it (steady state), as ratios to the same loop with nothing armed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "pyhelpers"))

import numpy as np  # noqa: E402


def bench_arrays(rows: int) -> None:
    from tensorsight.core.leakage import SplitData, check_splits

    rng = np.random.default_rng(0)
    train = rng.standard_normal((rows, 16)).astype(np.float32)
    test = rng.standard_normal((rows // 5, 16)).astype(np.float32)
    test[::100] = train[: len(test[::100])]
    labels = rng.integers(0, 2, rows)
    t0 = time.perf_counter()
    report = check_splits(
        {"train": SplitData("X_train", rows=train, labels=labels), "test": SplitData("X_test", rows=test)}
    )
    ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    seen = set(map(tuple, train.tolist()))
    naive_count = sum(1 for row in map(tuple, test.tolist()) if row in seen)
    naive = time.perf_counter() - t0
    (dup,) = report.by_check("duplicates")
    assert dup.count == naive_count, (dup.count, naive_count)
    print(
        f"arrays  {rows:>9,} + {len(test):,} rows x16 f32: check_splits {ours:6.2f} s "
        f"(duplicates {dup.count:,}, label checks included) | naive set of tuples {naive:6.2f} s "
        f"(duplicates only) | speed-up {naive / ours:5.1f}x"
    )


def bench_frames(rows: int) -> None:
    try:
        import pandas as pd
    except ImportError:
        print("frames  skipped: pandas not installed")
        return
    from tensorsight.agent.leakage.splits import describe
    from tensorsight.core.leakage import check_splits

    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {
            "user_id": rng.integers(0, rows // 2, rows),
            "date": np.datetime64("2020-01-01") + rng.integers(0, 1500, rows).astype("timedelta64[D]"),
            "amount": rng.gamma(2.0, 10.0, rows),
            "visits": rng.integers(0, 30, rows),
            "label": rng.integers(0, 2, rows),
        }
    )
    cut = int(rows * 0.8)
    t0 = time.perf_counter()
    report = check_splits(
        {"train": describe(frame.iloc[:cut], "train_df"), "test": describe(frame.iloc[cut:], "test_df")}
    )
    ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    train_rows = set(frame.iloc[:cut][["amount", "visits"]].itertuples(index=False, name=None))
    naive_count = sum(
        1 for r in frame.iloc[cut:][["amount", "visits"]].itertuples(index=False, name=None) if r in train_rows
    )
    naive = time.perf_counter() - t0
    checks = ", ".join(f"{i.check} {i.count:,}" for i in report.issues)
    print(
        f"frames  {rows:>9,} rows (id, date, 2 features, label): check_splits {ours:6.2f} s ({checks}) | naive "
        f"itertuples set {naive:6.2f} s (duplicates only, {naive_count:,}) | speed-up {naive / ours:5.1f}x"
    )


def _train_steps(model, batches, optimizer, loss_fn, count: int) -> list[float]:
    """CPU seconds of each training step (thread time: torch runs on this thread, so other load does not count)."""
    times = []
    for i in range(count):
        xb, yb = batches[i % len(batches)]
        t0 = time.thread_time()
        loss = loss_fn(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        times.append(time.thread_time() - t0)
    return times


def bench_observers() -> None:
    import torch
    from torch import nn

    torch.manual_seed(0)
    torch.set_num_threads(1)
    mlp = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    cnn = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10),
    )  # fmt: skip
    small = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))
    setups = {
        "MLP 256-512-512-10, batch 128": (
            mlp,
            [(torch.randn(128, 256), torch.randint(0, 10, (128,))) for _ in range(8)],
        ),
        "CNN 2 conv, 28x28, batch 64": (
            cnn,
            [(torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,))) for _ in range(8)],
        ),
        "tiny MLP 32-64-2, batch 32": (small, [(torch.randn(32, 32), torch.randint(0, 2, (32,))) for _ in range(8)]),
    }
    loss_fn = nn.CrossEntropyLoss()
    from tensorsight.agent.runtime import options
    from tensorsight.agent.shapes import observers, window_state

    options.set_options({"observeShapes": True})
    observers.arm("doctor")  # torch is imported: the first observation window opens now
    observers._close_window()  # from here the evaluation watcher (a global module pre-hook) is what stays armed
    first_steps = observers.FIRST_STEPS
    observers.FIRST_STEPS = 10**9  # keep windows open for a whole block to time them (a program gets 3 such steps)

    def unarmed() -> None:
        window_state.state.eval_watch = False  # the global module hooks stay registered and do nothing

    def steady() -> None:
        window_state.state.eval_watch = True  # between windows, until an evaluation pass: the hooks look for one

    def window() -> None:
        observers._open_window()
        window_state.state.initial = True

    for name, (model, batches) in setups.items():
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        _train_steps(model, batches, optimizer, loss_fn, 10)
        blocks: dict[str, list[float]] = {"unarmed": [], "window": [], "steady": []}
        for _ in range(4):  # interleaved blocks, so drift in machine load hits each state alike
            for state, enter in (("unarmed", unarmed), ("window", window), ("steady", steady)):
                enter()
                blocks[state].extend(_train_steps(model, batches, optimizer, loss_fn, 25))
                observers._close_window()
                unarmed()
        base, win, after = (statistics.median(blocks[k]) for k in ("unarmed", "window", "steady"))
        print(
            f"observers  {name:30}: unarmed {base * 1e3:6.2f} ms/step | in a window {win * 1e3:6.2f} ms "
            f"({win / base:4.2f}x; the first {first_steps} steps, then 1 in {observers.DEFAULT_EVERY}) | "
            f"after it {after * 1e3:6.2f} ms ({after / base:4.2f}x)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    bench_arrays(args.rows)
    bench_frames(args.rows)
    bench_observers()


if __name__ == "__main__":
    main()
