"""What "Break on NaN/Inf" costs, and what breakpoint conditions cost: ratios against a baseline, in one run.

    .venv/bin/python benchmarks/bench_sentinel.py [--rounds 7] [--steps 15] [--device cuda]

Part 1: one training step (forward, hand-written-style loss, backward, optimizer step) of an MLP, a small CNN and a
small transformer on the CPU, unarmed vs. with the NaN sentinel armed (target: at most 1.15x), and with
``torch.autograd.detect_anomaly`` beside it (the only thing PyTorch offers; it checks backward only). Configurations
are interleaved round by round and each ratio is the median over rounds of (config / unarmed in the same round), so
load from other processes on the machine cancels out. Times are the training thread's CPU time with one intra-op
thread (all of torch's CPU work then runs on that thread), which a busy shared machine disturbs far less than wall
time; ``--wall`` measures wall-clock time instead.

Part 2: the cost of one evaluation of a breakpoint condition (debugpy evaluates it on every hit), against the plain
condition a user would write without TensorSight.

Part 3: ops outside modules, sentinel armed vs unarmed (target: at most 1.15x). (a) A training step whose work is
mostly small ops outside any module: a tiny model and a loss and metrics written op by op in the training loop (the
sentinel checks them op by op within its cost budget, once past the first 50 steps: ``sentinel/budget.py``).
(b) After training: small ops after the last optimizer step with no module call in sight (metrics over saved
predictions): the budget holds in time, within such a stretch too. (c) Small ops before the program's first module
call (torch code that runs before training): nothing of the sentinel's is on their path.

``--device cuda``: the same models, data and conditions on the GPU. Times are then wall-clock, each step ending in
``torch.cuda.synchronize()`` (a GPU step's cost is not the thread's CPU time), and each part also prints the device
synchronisations per step, unarmed and armed (PyTorch's sync debug mode counts them): the sentinel's checks reduce
a group of tensors on the device and read the group's result back in one sync. ``--doctor``: the doctor's budget
(every training step observed) instead of a debug session's.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pyhelpers"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

import torch
import torch.nn.functional as F
from torch import nn

import tensorsight
from tensorsight.agent import sentinel
from tensorsight.agent.runtime import options
from tensorsight.agent.sentinel import state as sentinel_state
from tensorsight.agent.sentinel.budget import budget as sentinel_budget

DEVICE = torch.device("cpu")  # --device


def mlp() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    return model.to(DEVICE), torch.randn(128, 256, device=DEVICE), torch.randint(0, 10, (128,), device=DEVICE)


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.norm = nn.BatchNorm2d(32)
        self.fc = nn.Linear(32 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.norm(self.conv2(x))), 2)
        return self.fc(x.flatten(1))


def cnn() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    return (
        SmallCNN().to(DEVICE),
        torch.randn(32, 3, 32, 32, device=DEVICE),
        torch.randint(0, 10, (32,), device=DEVICE),
    )


class Block(nn.Module):
    """A pre-norm transformer block with attention written out (user code inside the model)."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.ln2 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, time_, width = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(width, dim=2)
        shape = (batch, time_, self.heads, width // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(width // self.heads)
        mask = torch.full((time_, time_), float("-inf"), device=x.device).triu(1)
        attention = torch.softmax(scores + mask, dim=-1)
        y = (attention @ v).transpose(1, 2).reshape(batch, time_, width)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab: int = 96, width: int = 64, heads: int = 4, layers: int = 2, context: int = 32) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(context, width)
        self.blocks = nn.ModuleList([Block(width, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tokens(idx) + self.positions(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x)).flatten(0, 1)


def transformer() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    return (
        TinyGPT().to(DEVICE),
        torch.randint(0, 96, (16, 32), device=DEVICE),
        torch.randint(0, 96, (16 * 32,), device=DEVICE),
    )


def make_step(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> Callable[[], None]:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step() -> None:
        optimizer.zero_grad()
        logits = model(inputs)
        loss = -(F.log_softmax(logits, dim=-1).gather(1, targets[:, None])).mean()  # a loss outside any module
        loss.backward()
        optimizer.step()

    return on_device(step)


CLOCK = time.thread_time


def on_device(step: Callable[[], None]) -> Callable[[], None]:
    """On a GPU a step ends when its kernels have run: the timed step waits for them."""
    if DEVICE.type != "cuda":
        return step

    def synchronized() -> None:
        step()
        torch.cuda.synchronize()

    return synchronized


def syncs_per_call(fn: Callable[[], object]) -> int:
    """Device synchronisations one call makes (``support.cuda.count_syncs``); 0 off CUDA."""
    if DEVICE.type != "cuda":
        return 0
    from support.cuda import count_syncs

    return count_syncs(fn)[0]


def timed(step: Callable[[], None], steps: int) -> float:
    times = []
    for _ in range(steps):
        start = CLOCK()
        step()
        times.append(CLOCK() - start)
    return statistics.median(times)


def measure_training(rounds: int, steps: int) -> None:
    print(f"Part 1: training step, sentinel armed vs unarmed ({rounds} rounds x {steps} steps, median ratio)")
    print(f"  {'model':<12} {'unarmed':>10} {'sentinel':>10} {'detect_anomaly':>15}")
    for name, build in (("MLP", mlp), ("CNN", cnn), ("transformer", transformer)):
        torch.manual_seed(0)
        step = make_step(*build())
        for _ in range(5):
            step()
        if DEVICE.type == "cuda":
            unarmed_syncs = syncs_per_call(step)
            sentinel.break_on_nonfinite(True)
            for _ in range(3):
                step()
            armed_syncs = syncs_per_call(step)
            sentinel.break_on_nonfinite(False)
            step()
            print(f"  {name:<12} device syncs per step: unarmed {unarmed_syncs}, sentinel armed {armed_syncs}")
        armed_ratios, anomaly_ratios, bases = [], [], []
        for _ in range(rounds):
            base = timed(step, steps)
            sentinel.break_on_nonfinite(True)
            step()  # the first module call puts the sentinel's mode in place
            armed = timed(step, steps)
            sentinel.break_on_nonfinite(False)
            step()  # ...and takes it away again
            with torch.autograd.detect_anomaly(check_nan=True):
                anomaly = timed(step, steps)
            bases.append(base)
            armed_ratios.append(armed / base)
            anomaly_ratios.append(anomaly / base)
        print(
            f"  {name:<12} {statistics.median(bases) * 1e3:>8.2f}ms {statistics.median(armed_ratios):>9.3f}x "
            f"{statistics.median(anomaly_ratios):>14.3f}x"
        )


def per_call(fn: Callable[[], object], calls: int = 2000) -> float:
    best = math.inf
    for _ in range(5):
        start = CLOCK()
        for _ in range(calls):
            fn()
        best = min(best, (CLOCK() - start) / calls)
    return best


def measure_conditions() -> None:
    print("Part 2: one condition evaluation (what debugpy runs on each hit), best of 5 x 2000 calls")
    torch.manual_seed(0)
    model, inputs, targets = mlp()
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    activations = torch.randn(128, 512, device=DEVICE)
    rows = [
        (
            "nan(loss)",
            lambda: tensorsight.nan(loss),
            "bool(torch.isnan(loss).any())",
            lambda: bool(torch.isnan(loss).any()),
        ),
        (
            "nonfinite(activations)",
            lambda: tensorsight.nonfinite(activations),
            "bool(~torch.isfinite(activations).all())",
            lambda: bool(~torch.isfinite(activations).all()),
        ),
        (
            "nonfinite(model)",
            lambda: tensorsight.nonfinite(model),
            "any(isnan|isinf of each param, grad)",
            lambda: any(
                bool((~torch.isfinite(t)).any()) for p in model.parameters() for t in (p, p.grad) if t is not None
            ),
        ),
        (
            "grad_norm(model) > 1e3",
            lambda: tensorsight.grad_norm(model) > 1e3,
            "sqrt(sum(g.pow(2).sum())) > 1e3",
            lambda: float(sum(p.grad.pow(2).sum() for p in model.parameters()) ** 0.5) > 1e3,
        ),
        ("spike(loss, 3)", lambda: tensorsight.spike(loss, 3), "loss.item() > 100", lambda: loss.item() > 100),
    ]
    print(f"  {'condition':<26} {'per call':>10}   {'plain equivalent':<40} {'per call':>10} {'ratio':>7}")
    for label, ours, plain_label, plain in rows:
        ours_t, plain_t = per_call(ours), per_call(plain)
        ours_text, plain_text = f"{ours_t * 1e6:.1f}us", f"{plain_t * 1e6:.1f}us"
        syncs = f"  syncs {syncs_per_call(ours)} vs {syncs_per_call(plain)}" if DEVICE.type == "cuda" else ""
        print(f"  {label:<26} {ours_text:>10}   {plain_label:<40} {plain_text:>10} {ours_t / plain_t:>6.2f}x{syncs}")


def outside_heavy_step() -> Callable[[], None]:
    """A step dominated by small ops outside modules: per-class losses and metrics written out in the loop."""
    model = nn.Linear(32, 8).to(DEVICE)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    inputs, targets = torch.randn(64, 32, device=DEVICE), torch.randint(0, 8, (64,), device=DEVICE)

    def step() -> None:
        optimizer.zero_grad()
        probabilities = model(inputs).softmax(dim=-1)
        loss = torch.zeros((), device=DEVICE)
        for label in range(8):
            chosen = probabilities[:, label]
            truth = (targets == label).float()
            loss = loss - (truth * torch.log(chosen + 1e-6) + (1 - truth) * torch.log(1 - chosen + 1e-6)).mean()
        accuracy = (probabilities.argmax(dim=-1) == targets).float().mean()
        loss.backward()
        optimizer.step()
        del accuracy

    return on_device(step)


def after_training_ops() -> Callable[[], None]:
    """What a program runs after its last optimizer step with no module call in sight: metrics over saved predictions,
    op by op (an evaluation summary, post-processing), about 5,000 small ops with no boundary of the sentinel's, after
    one training step of a tiny model (which leaves the outside-modules mode on the stack when it observes)."""
    predictions = torch.randn(256, 10, device=DEVICE).softmax(dim=-1)
    targets = torch.randint(0, 10, (256,), device=DEVICE)
    thresholds = [i / 50 for i in range(1, 50)]
    model = nn.Linear(10, 10).to(DEVICE)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

    def summarise() -> None:
        optimizer.zero_grad()
        F.cross_entropy(model(predictions), targets).backward()
        optimizer.step()
        for label in range(10):
            chosen = predictions[:, label]
            truth = (targets == label).float()
            for threshold in thresholds:
                flagged = (chosen > threshold).float()
                hits = (flagged * truth).sum()
                precision = hits / flagged.sum().clamp(min=1.0)
                recall = hits / truth.sum().clamp(min=1.0)
                f1 = 2 * precision * recall / (precision + recall + 1e-9)
                torch.log(f1 + 1e-6)

    return on_device(summarise)


def small_ops() -> None:
    """Small ops with no module call: what runs before training starts."""
    x = torch.ones(16, device=DEVICE)
    for _ in range(20):
        x = torch.sqrt(x * 1.0001 + 0.5)
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


def measure_outside(rounds: int, steps: int) -> None:
    print(f"Part 3: ops outside modules, sentinel armed vs unarmed ({rounds} rounds, median ratio; target <= 1.15x)")
    torch.manual_seed(0)
    cases = (
        ("loss and metrics op by op", outside_heavy_step()),
        ("after training (no step)", after_training_ops()),
        ("small ops before training", small_ops),
    )
    for label, run in cases:
        sentinel_state.st.started = run is not small_ops  # after the first module call, or before it
        sentinel.break_on_nonfinite(True)
        for _ in range(60):  # past the first steps, which the sentinel always observes (sentinel/budget.py)
            run()
        sentinel.break_on_nonfinite(False)
        ratios, bases = [], []
        for _ in range(rounds):
            base = timed(run, steps)
            sentinel.break_on_nonfinite(True)
            for _ in range(5):  # the mode joins at the next module call, the budget measures a few steps
                run()
            armed = timed(run, steps)
            sentinel.break_on_nonfinite(False)
            run()
            bases.append(base)
            ratios.append(armed / base)
        ratio = statistics.median(ratios)
        verdict = "ok" if ratio <= 1.15 else "OVER TARGET"
        print(f"  {label:<28} {statistics.median(bases) * 1e3:>8.3f}ms {ratio:>9.3f}x  (target 1.15x: {verdict})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--wall", action="store_true", help="measure wall-clock time instead of thread CPU time")
    parser.add_argument("--only", choices=("training", "conditions", "outside"), help="run one part")
    parser.add_argument("--doctor", action="store_true", help="the doctor's budget (every step observed)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (wall-clock times, synchronised steps)")
    args = parser.parse_args()
    global CLOCK, DEVICE
    DEVICE = torch.device(args.device)
    if args.wall or DEVICE.type == "cuda":
        CLOCK = time.perf_counter
    if DEVICE.type == "cuda":
        print(f"device: {torch.cuda.get_device_name()} (torch {torch.__version__})")
    torch.set_num_threads(1)
    options.set_options({})
    sentinel.arm("doctor")  # no debugger here: a birth would be reported, never stopped at
    sentinel_budget.active = not args.doctor  # a debug session's budget; the doctor observes every step
    if args.only in (None, "training"):
        measure_training(args.rounds, args.steps)
    if args.only in (None, "conditions"):
        measure_conditions()
    if args.only in (None, "outside"):
        measure_outside(args.rounds, args.steps)


if __name__ == "__main__":
    main()
