"""``python -m tensorsight demo``: every toolbox tool on bundled synthetic data, with what each one found.

The lesson's toolbox demo, grown up. All data is made here, in code, with a seeded local generator (nothing is
downloaded); the whole run takes a few seconds on a CPU. Each section prints the tool's own output, and the demo
ends with a one-line verdict per tool, so the output doubles as a smoke test (tests/cli/test_demo.py reads it).
A tool that fails (a module renamed, a check broken) shows as ``FAILED`` and the demo exits 1.
"""

from __future__ import annotations

import argparse
import io
import os
import runpy
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the large leakage example (default 1e6)")


def _section(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(3, 100 - len(title)))


def _small_cnn(torch: Any) -> Any:
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 7 * 7, 32),
        nn.ReLU(),
        nn.Linear(32, 10),
    )


def run(args: argparse.Namespace) -> int:
    try:
        import numpy as np
        import torch
    except ImportError as exc:
        print(f"tensorsight demo needs numpy and torch installed in this interpreter: {exc}", file=sys.stderr)
        return 2
    from tensorsight.agent import toolbox
    from tensorsight.core.shapes import elementwise_broadcast_problem, loss_broadcast_problem

    started = time.perf_counter()
    verdicts: list[tuple[str, str]] = []
    rng = np.random.default_rng(7)
    gen = torch.Generator().manual_seed(7)

    def tool(title: str, body: Callable[[], str]) -> None:
        _section(title)
        try:
            verdicts.append((title, body()))
        except Exception as exc:  # noqa: BLE001 - one failing tool must not hide the others
            verdicts.append((title, f"FAILED: {type(exc).__name__}: {exc}"))
            print(f"  failed: {type(exc).__name__}: {exc}")

    # ---- debug_print
    def demo_debug_print() -> str:
        activations = torch.randn(64, 16, generator=gen)
        logits = torch.randn(64, 10, generator=gen)
        logits[3, 2] = float("nan")
        toolbox.debug_print(activations)
        toolbox.debug_print("logits", logits)
        return "printed 2 summaries (logits carries 1 NaN)"

    tool("debug_print: one summary line per tensor", demo_debug_print)

    # ---- Timer
    def demo_timer() -> str:
        from tensorsight.agent.measurement.timer import Timer

        a = torch.randn(512, 512, generator=gen)
        with Timer("512x512 matmul x20") as timer:
            for _ in range(20):
                a @ a
        return f"timed a block: {timer.elapsed * 1000:.1f} ms"

    tool("Timer (Cronometro): time a block", demo_timer)

    # ---- check_shapes
    def demo_check_shapes() -> str:
        model = _small_cnn(torch)
        rows = toolbox.check_shapes(model, torch.randn(8, 1, 28, 28, generator=gen))
        return f"mapped {len(rows)} modules, output {rows[0].output_shapes[0]}, {rows[0].params:,} parameters"

    tool("check_shapes: the shape map of a CNN for one batch", demo_check_shapes)

    def demo_shape_error() -> str:
        model = _small_cnn(torch)
        model[7] = torch.nn.Linear(16 * 5 * 5, 32)  # the classic bug: features computed for another input size
        rows = toolbox.check_shapes(model, torch.randn(8, 1, 28, 28, generator=gen))
        return f"explained: {rows.error}" if rows.error else "no error (unexpected)"

    tool("check_shapes on a broken model: the shape error explained", demo_shape_error)

    # ---- silent broadcasting
    def demo_broadcast() -> str:
        loss = loss_broadcast_problem((64, 1), (64,))
        op = elementwise_broadcast_problem((64, 1), (64,))
        assert loss is not None and op is not None
        print(f"  loss(prediction [64, 1], target [64]): {loss.message}")
        print(f"  (prediction - target) with [64, 1] and [64]: {op.message}")
        print("  (in a debugged or doctored script the observers report this at the loss line, as a shape finding)")
        return f"[64, 1] vs [64] broadcasts to {list(loss.result)}"

    tool("silent broadcasting: prediction [N, 1] against target [N]", demo_broadcast)

    # ---- detect_nan / invalid_values
    def demo_nan() -> str:
        model = torch.nn.Linear(4, 2)
        with torch.no_grad():
            loss = model(torch.randn(3, 4, generator=gen)).sum()
        batch = torch.tensor([[0.5, float("nan"), 1.0], [float("inf"), 2.0, -float("inf")]])
        found_model = toolbox.detect_nan(model)
        found_batch = toolbox.detect_nan(batch, "batch")
        counts = toolbox.valores_invalidos(batch, "batch")
        c = counts["batch"]
        return (
            f"model finite={not found_model}, batch has NaN/Inf={found_batch} "
            f"({c['nan']} NaN, {c['posinf']} +Inf, {c['neginf']} -Inf); loss finite={not toolbox.detect_nan(loss)}"
        )

    tool("detect_nan / invalid_values (valores_invalidos): NaN and Inf counts", demo_nan)

    # ---- check_data_leakage
    def demo_leakage() -> str:
        n = 2_000
        features = rng.standard_normal((n, 8)).astype(np.float32)
        labels = (features[:, 0] + 0.5 * features[:, 1] > 0).astype(np.int64)
        features[:, 7] = labels  # a feature that is the label
        X_train, y_train = features[:1500], labels[:1500]
        X_test = np.concatenate([features[1500:], features[:40]])  # 40 training samples copied into test
        y_test = np.concatenate([labels[1500:], labels[:40]])
        report = toolbox.check_data_leakage((X_train, y_train), (X_test, y_test))
        found = [f"{i.check} ({i.count})" for i in report.issues]
        return "found " + ", ".join(found) if found else "nothing found"

    tool("check_data_leakage: duplicates across splits and a label-copy feature", demo_leakage)

    def demo_leakage_frame() -> str:
        try:  # pandas is the user's optional dependency, not part of TensorSight
            from pandas import DataFrame
        except ImportError:
            return "skipped: pandas is not installed"
        days = np.datetime64("2024-01-01") + np.arange(600).astype("timedelta64[D]")
        frame = DataFrame(
            {
                "customer_id": np.arange(600) % 450,
                "date": days,
                "spend": rng.gamma(2.0, 10.0, 600),
                "visits": rng.integers(0, 20, 600),
                "churned": rng.integers(0, 2, 600),
            }
        )
        shuffled = frame.sample(frac=1.0, random_state=3)  # a random split of time-ordered data
        train_df, test_df = shuffled.iloc[:450], shuffled.iloc[450:]
        report = toolbox.fuga_de_datos(train_df, test_df, label="churned")
        found = [f"{i.check} ({i.count})" for i in report.issues]
        return "found " + ", ".join(found) if found else "nothing found"

    tool("fuga_de_datos on DataFrames: shared customer ids and a random split of dated rows", demo_leakage_frame)

    def demo_leakage_large() -> str:
        n = max(10, int(args.rows))
        big_train = rng.standard_normal((n, 16)).astype(np.float32)
        big_test = rng.standard_normal((n // 5, 16)).astype(np.float32)
        big_test[:: max(1, n // 5 // 100)] = big_train[: len(big_test[:: max(1, n // 5 // 100)])]
        t0 = time.perf_counter()
        report = toolbox.check_data_leakage(big_train, big_test)
        seconds = time.perf_counter() - t0
        return f"{n:,} + {len(big_test):,} rows checked in {seconds:.2f} s; {len(report.issues)} issue(s)"

    tool(f"check_data_leakage at scale: {int(args.rows):,} training rows", demo_leakage_large)

    # ---- check_devices
    def demo_devices() -> str:
        model = torch.nn.Linear(4, 2)
        inputs = torch.randn(3, 4, generator=gen)
        ok = toolbox.check_devices(model, inputs)
        print("  this machine may have no second device: a 'meta' tensor stands in for one below")
        stray = torch.empty(3, 4, device="meta")
        issues = toolbox.check_devices(model, inputs, stray)
        return f"{len(ok)} issue(s) with all on cpu; {len(issues)} with a meta tensor mixed in"

    tool("check_devices: parameters and inputs on one device?", demo_devices)

    # ---- setup_logging
    def demo_logging() -> str:
        from tensorsight.agent.measurement.training_log import setup_logging

        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "training.log")
            logger = setup_logging(path, name="tensorsight.demo")
            logger.info("step 1 loss 0.693")
            for handler in list(logger.handlers):
                handler.flush()
                handler.close()
                logger.removeHandler(handler)
            with open(path, encoding="utf-8") as handle:
                line = handle.read().strip()
        print(f"  {line}")
        return "wrote a log line"

    tool("setup_logging: a training log file", demo_logging)

    # ---- memory_top
    def demo_memory() -> str:
        import tracemalloc

        from tensorsight.agent.measurement.memory import memory_top

        was_tracing = tracemalloc.is_tracing()
        if not was_tracing:
            tracemalloc.start(1)
        with tempfile.TemporaryDirectory() as folder:  # a stand-in for user code (ours is filtered out)
            script = os.path.join(folder, "demo_features.py")
            with open(script, "w", encoding="utf-8") as handle:
                handle.write("cache = [bytearray(256 * 1024) for _ in range(8)]  # 2 MiB held here\n")
            kept = runpy.run_path(script)
            sites = memory_top(5)
            print(str(sites))
            del kept
        if not was_tracing:
            tracemalloc.stop()
        return f"{len(sites)} allocation site(s) listed"

    tool("memory_top: where Python memory is held", demo_memory)

    # ---- overfit_one_batch
    def demo_overfit() -> str:
        from tensorsight.agent.measurement.overfit import overfit_one_batch

        model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 3))
        xb = torch.randn(16, 8, generator=gen)
        yb = torch.randint(0, 3, (16,), generator=gen)
        result = overfit_one_batch(model, torch.nn.CrossEntropyLoss(), (xb, yb))
        print(f"  {result}")
        verdict = "passed" if result.passed else "did not pass"
        return f"{verdict}: loss {result.initial_loss:.3g} -> {result.final_loss:.3g}"

    tool("overfit_one_batch: can the model learn one batch?", demo_overfit)

    _section("summary")
    width = max(len(t) for t, _ in verdicts)
    out = io.StringIO()
    for title, verdict in verdicts:
        out.write(f"  {title.split(':')[0].ljust(min(width, 40))}  {verdict}\n")
    print(out.getvalue().rstrip())
    print(f"demo finished in {time.perf_counter() - started:.1f} s")
    return 1 if any(v.startswith("FAILED") for _, v in verdicts) else 0
