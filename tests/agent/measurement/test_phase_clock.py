"""agent.measurement.phases: the phase clock's wrappers, all made by one factory, on a real torch training loop.

In this process (no debugger): install wraps torch.autograd.backward, the DataLoader iterator's __next__,
DataLoader.__init__/__iter__ and Optimizer.__init__; a loop of four steps gets data and backward time, its loss, the
user lines of its loader and optimizer; the epoch's StopIteration and a failing backward pass through unchanged;
``quiet()`` hides our own backward; uninstall puts every original back. A real debugpy session holds a loop at two
breakpoints: the time held counts in no phase (agent.debugger.holds).
"""

from __future__ import annotations

import json
import os
import time

import pytest
import torch
import torch.utils.data.dataloader as dataloader
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from support.dap import DebugSession
from support.paths import marked_lines, program
from tensorsight.agent.measurement.phases import PhaseClock, quiet

HERE = os.path.abspath(__file__)


def _wrapped_places() -> tuple:
    return (
        torch.autograd.backward,
        dataloader._BaseDataLoaderIter.__next__,
        DataLoader.__init__,
        DataLoader.__iter__,
        torch.optim.Optimizer.__init__,
    )


def test_the_wrappers_time_observe_pass_errors_through_and_come_off():
    originals = _wrapped_places()
    clock = PhaseClock(torch)
    records = []
    clock.step_listeners.append(records.append)
    clock.install()
    try:
        for wrapper, original in zip(_wrapped_places(), originals, strict=True):
            assert wrapper is not original and wrapper.__wrapped__ is original  # functools.wraps: same name, doc
            assert wrapper.__name__ == original.__name__
        torch.manual_seed(0)
        model = nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        optimizer_line = _line_of("optimizer = torch.optim.SGD")
        loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8)
        losses = []
        for x, y in loader:  # the epoch ends with a StopIteration raised through the timed __next__
            loss = ((model(x) - y) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
        assert len(records) == 4
        assert all(r.seconds["data"] > 0 and r.seconds["backward"] > 0 for r in records)
        assert [r.loss for r in records] == pytest.approx(losses)
        assert clock.optimizer_at(optimizer) == (HERE, optimizer_line)
        settings = clock.loader_settings()
        assert settings is not None and settings.batch_size == 8 and settings.file == HERE

        before = dict(clock._seconds)
        with quiet():
            (model(torch.ones(1, 4)) ** 2).sum().backward()  # our own work: not timed, not a training loss
        assert clock._seconds["backward"] == before["backward"] and clock._losses == []
        with pytest.raises(RuntimeError, match="does not require grad"):
            torch.ones(2).sum().backward()  # the original's error, unchanged
    finally:
        clock.uninstall()
    assert _wrapped_places() == originals


def _line_of(text: str) -> int:
    with open(HERE, encoding="utf-8") as handle:
        return next(i for i, line in enumerate(handle, 1) if line.strip().startswith(text))


# --------------------------------------------------------------------------------------------------- real debugger
HELD_SECONDS = 2.0


@pytest.mark.timing  # bounds a wall time: scripts/test.sh runs it with nothing beside it
def test_time_held_at_a_breakpoint_counts_in_no_phase(tmp_path):
    """Held 2 s at a breakpoint in the loop body (step 4) and 2 s inside forward (step 8): every step's phases stay
    at the milliseconds the loop takes, where the pauses used to land in "other" and "forward"."""
    path = program("paused_phases.py")
    lines = marked_lines(path)
    record = tmp_path / "phases.jsonl"
    breakpoints = [(path, lines["loop"], "step == 3"), (path, lines["forward"], "step == 7")]
    env = {"PHASES_FILE": str(record), "OMP_NUM_THREADS": "1"}
    with DebugSession.launch(path, breakpoints=breakpoints, options={"measure": True}, env=env) as session:
        for _ in range(2):
            stop = session.wait_for_stop()
            time.sleep(HELD_SECONDS)
            session.continue_(stop["threadId"])
        session.wait_for_exit(timeout=120)
    seen = [json.loads(line) for line in record.read_text().splitlines()]
    phases = {e["step"]: e["seconds"] for e in seen if e["type"] == "phases"}
    assert sorted(phases) == list(range(1, 13))
    for step in (4, 8):  # the steps that were held (step 1 pays for lazy initialisation: not compared)
        assert sum(phases[step].values()) < HELD_SECONDS / 2, (step, phases[step])
        assert max(phases[step].values()) < HELD_SECONDS / 2, (step, phases[step])
    timed = [e["seconds"] for e in seen if e["type"] == "timer"]  # tensorsight.Timer around each step
    assert len(timed) == 12 and max(timed) < HELD_SECONDS / 2, timed


def test_a_hand_written_update_recognised_at_the_next_forward_leaves_its_submodules_inside_it():
    """A hand-written SGD step is recognised when the next forward begins; the step record it ends must not reset
    the depth of that forward, or each layer inside it would count as a model pass of its own."""
    from tensorsight.agent.runtime import steps

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
    x, y = torch.randn(16, 3), torch.randn(16, 1)
    clock = PhaseClock(torch)
    passes: list[str] = []
    clock.model_input_listeners.append(lambda module, args, split: passes.append(type(module).__name__))
    steps.arm()
    clock.install()
    try:
        for _ in range(4):
            loss = ((model(x) - y) ** 2).mean()
            model.zero_grad()
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.01 * p.grad
    finally:
        clock.uninstall()
    assert steps.current_step() >= 2  # the updates were recognised as steps
    assert passes == ["Sequential"] * 4
