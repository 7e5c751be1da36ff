"""The retained-graph scan (``MemoryMonitor.scan_retained_graphs``) on real autograd graphs: a chain that restarts
every epoch still counts, a fresh graph per step never does."""

from __future__ import annotations

import sys

import torch

from tensorsight.agent.measurement.memory import MemoryMonitor, graph_nodes


def _epoch(monitor: MemoryMonitor, weight: torch.Tensor, first_step: int, steps: int, accumulate: bool) -> list:
    """One short epoch the way users write it; the scan runs where optimizer.step() would (after each step)."""
    findings = []
    total_loss = 0
    for offset in range(steps):
        loss = (weight * torch.ones(4)).sum()
        total_loss += loss if accumulate else loss.item()
        findings += monitor.scan_retained_graphs(sys._getframe(), first_step + offset, max_frames=1)
    return findings


def test_a_chain_restarted_each_short_epoch_is_reported_once_it_grew_in_three_steps():
    monitor = MemoryMonitor(torch)
    weight = torch.ones(4, requires_grad=True)
    assert _epoch(monitor, weight, 1, 2, accumulate=True) == []  # one growth in epoch 1
    assert _epoch(monitor, weight, 3, 2, accumulate=True) == []  # a new chain, one more growth: 2 in all
    (finding,) = _epoch(monitor, weight, 5, 2, accumulate=True)
    assert finding.kind == "memory" and finding.details["variable"] == "total_loss"
    assert finding.details["steps_retained"] == 3 and finding.details["graph_nodes"] >= 3
    assert finding.line == _epoch.__code__.co_firstlineno + 6  # the `total_loss += ...` line
    assert _epoch(monitor, weight, 7, 4, accumulate=True) == []  # reported once


def test_numbers_accumulated_and_fresh_graphs_per_step_are_never_reported():
    monitor = MemoryMonitor(torch)
    weight = torch.ones(4, requires_grad=True)
    for epoch in range(5):
        assert _epoch(monitor, weight, 1 + 3 * epoch, 3, accumulate=False) == []


def test_graph_nodes_counts_each_node_once_and_stops_at_the_limit():
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    z = y + y  # y's node is reached twice
    assert graph_nodes(z) == 3  # AddBackward, MulBackward, AccumulateGrad
    assert graph_nodes([z, y]) == 3
    chain = x
    for _ in range(50):
        chain = chain + 1
    assert graph_nodes(chain, limit=10) == 10
    assert graph_nodes(torch.ones(2)) == 0


def _update_ema(ema: dict, weights: dict, decay: float) -> None:
    for name, weight in weights.items():
        ema[name] = decay * ema[name] + (1 - decay) * weight  # no detach: each step's graph chains to the last


def test_an_ema_kept_in_a_dict_without_detach_is_reported_at_the_update_line_once():
    monitor = MemoryMonitor(torch)
    weights = {"w": torch.ones(3, requires_grad=True), "b": torch.zeros(1, requires_grad=True)}
    ema = {name: w.detach().clone() for name, w in weights.items()}
    alias = ema  # the same dict seen under another name: still one finding
    findings = []
    for step in range(1, 6):
        findings += monitor.scan_retained_graphs(sys._getframe(), step, max_frames=1)
        _update_ema(ema, weights, 0.9)
    (finding,) = findings
    assert finding.kind == "memory" and finding.line == _update_ema.__code__.co_firstlineno + 2
    assert finding.details["variable"] in ("ema", "alias") and finding.details["graph_nodes"] >= 6
    detached = {name: w.detach().clone() for name, w in weights.items()}
    quiet = MemoryMonitor(torch)
    for step in range(1, 6):
        assert quiet.scan_retained_graphs(sys._getframe(), step, max_frames=1) == []
        with torch.no_grad():
            _update_ema(detached, weights, 0.9)
    assert alias is ema


def test_a_big_dict_in_the_scanned_frame_is_read_no_further_than_its_first_items():
    """A module-level vocabulary in the training loop's frame: each step's scan copies its first items, not all."""
    import tracemalloc

    monitor = MemoryMonitor(torch)
    vocabulary = {f"token{index}": index for index in range(200_000)}  # noqa: F841 - read by the scan through f_locals
    monitor.scan_retained_graphs(sys._getframe(), 1, max_frames=1)  # first scan: the monitor's own tables exist
    tracemalloc.start()
    try:
        monitor.scan_retained_graphs(sys._getframe(), 2, max_frames=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 200_000, f"the scan allocated {peak} bytes for a dict of 200,000 items"  # a full copy: ~14 MB


def test_on_the_scan_schedule_a_total_that_starts_keeping_graphs_late_is_reported_within_one_period():
    """The measurement runs the scan on ``retained_scan_due`` steps only: a loop that starts summing loss tensors at
    step 300 (say, after a warm-up phase that summed ``.item()``s) is still reported, before one period is over."""
    from tensorsight.agent.measurement.memory import RETAINED_SCAN_FIRST, RETAINED_SCAN_PERIOD, retained_scan_due

    monitor = MemoryMonitor(torch)
    weight = torch.ones(4, requires_grad=True)
    total_loss = 0
    reported_at = None
    scanned = 0
    for step in range(1, 600):
        loss = (weight * torch.ones(4)).sum()
        total_loss += loss if step >= 300 else loss.item()
        if retained_scan_due(step):
            scanned += 1
            if monitor.scan_retained_graphs(sys._getframe(), step, max_frames=1):
                reported_at = step
                break
    assert reported_at is not None and 300 < reported_at <= 300 + RETAINED_SCAN_PERIOD + 3
    assert scanned < RETAINED_SCAN_FIRST + (reported_at - RETAINED_SCAN_FIRST) // 4  # far fewer scans than steps


class SmoothingTrainer:
    """A trainer that keeps a smoothed loss for its log, the way small trainers write it."""

    def __init__(self, weight: torch.Tensor, keep_graph: bool) -> None:
        self.weight = weight
        self.keep_graph = keep_graph
        self.smooth_loss = None
        self.history: list = []

    def step(self) -> torch.Tensor:
        loss = (self.weight * torch.ones(4)).sum()
        if self.smooth_loss is None:
            self.smooth_loss = loss.item()
        else:
            latest = loss if self.keep_graph else loss.item()
            self.smooth_loss = 0.9 * self.smooth_loss + 0.1 * latest  # the line that grows it
        return loss

    def run(self, monitor: MemoryMonitor, steps: int, outer_frames: int) -> list:
        findings = []
        for step in range(1, steps + 1):
            self.step()
            findings += monitor.scan_retained_graphs(sys._getframe(), step, max_frames=outer_frames)
        return findings


class LoggingTrainer(SmoothingTrainer):
    """A subclass: its instances' ``__dict__`` is described on the base class."""


def test_an_attribute_of_the_programs_trainer_that_keeps_every_graph_is_reported_once_at_its_update():
    monitor = MemoryMonitor(torch)
    trainer = LoggingTrainer(torch.ones(4, requires_grad=True), keep_graph=True)
    # scanned from run() (``self``) and from this test's frame (``trainer``): one finding, named as run() names it
    (finding,) = trainer.run(monitor, 6, outer_frames=2)
    assert finding.kind == "memory" and finding.details["variable"] == "self.smooth_loss"
    assert finding.line == SmoothingTrainer.step.__code__.co_firstlineno + 6
    quiet = SmoothingTrainer(torch.ones(4, requires_grad=True), keep_graph=False)
    assert quiet.run(MemoryMonitor(torch), 6, outer_frames=2) == []
    assert trainer.history == []  # only read
