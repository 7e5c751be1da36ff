"""Batches a DataLoader hands over (agent/sentinel/batches.py), in process with the real hooks: the first fetches are
checked op by op, later ones run without our mode, every batch is checked once when it arrives, and ``zero_grad``
runs without our mode too."""

import sys

import numpy as np
import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils.data import DataLoader, Dataset, TensorDataset

from tensorsight.agent.sentinel import batches
from tensorsight.agent.sentinel.state import st, sw


class Rows(Dataset):
    def __init__(self, bad_row=None):
        self.bad_row = bad_row

    def __len__(self):
        return 64

    def __getitem__(self, index):
        value = float("nan") if index == self.bad_row else float(index)
        return torch.as_tensor(np.full(3, value, dtype=np.float32)), index % 2


class Counting(TorchFunctionMode):
    """The program's own mode, pushed above ours: notes, for each op it sees, whether ours is on the stack."""

    def __init__(self):
        super().__init__()
        self.ours_on = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.ours_on.append(st.mode_on)
        return func(*args, **(kwargs or {}))


def start_training():
    nn.Linear(2, 2)(torch.ones(1, 2))  # the program's first module call: our mode joins
    assert st.mode_on


def test_fetches_past_the_first_ones_run_without_our_mode(armed, monkeypatch):
    start_training()
    monkeypatch.setattr(batches, "_fetches", [0])
    modes_during_fetch = []
    real_getitem = Rows.__getitem__

    def getitem(self, index):
        modes_during_fetch.append(st.mode_on)
        return real_getitem(self, index)

    monkeypatch.setattr(Rows, "__getitem__", getitem)
    for _ in DataLoader(Rows(), batch_size=4):
        assert st.mode_on  # back on for the program's own ops between fetches
    first = batches.OP_CHECKED_FETCHES * 4
    assert all(modes_during_fetch[:first]) and not any(modes_during_fetch[first:])
    assert sw.last is None


def test_a_nan_in_a_late_batch_is_reported_when_it_arrives(armed, monkeypatch):
    start_training()
    monkeypatch.setattr(batches, "_fetches", [batches.OP_CHECKED_FETCHES])  # past the fetches checked op by op
    loader = DataLoader(Rows(bad_row=37), batch_size=8)
    arrived = []
    for features, _ in loader:
        line = sys._getframe().f_lineno - 1
        arrived.append(features)
        if sw.last is not None:
            break
    record = sw.last
    assert len(arrived) == 5  # rows 32-39: the fifth batch
    assert (record.phase, record.op, record.line, record.nan) == ("data", "(DataLoader batch)", line, 3)
    assert record.title == "NaN came in here" and record.output is arrived[-1]
    assert f"made by Rows.__getitem__ at {__file__.rsplit('/', 1)[-1]}:" in record.message


def test_a_library_dataset_over_a_tensor_holding_inf_is_reported_without_naming_torch(armed):
    targets = torch.zeros(32, 1)
    targets[5] = float("-inf")
    start_training()
    next(iter(DataLoader(TensorDataset(torch.ones(32, 2), targets), batch_size=16)))
    record = sw.last
    assert record is not None and record.neginf == 1 and "tensor 2 of the batch ([16, 1] float32)" in record.message
    assert "made by" not in record.message


def test_clean_batches_report_nothing_and_change_nothing(armed):
    start_training()
    expected = [batch for batch in DataLoader(Rows(), batch_size=8)]
    sw.enabled = False
    plain = [batch for batch in DataLoader(Rows(), batch_size=8)]
    assert sw.last is None
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(expected, plain, strict=True))


def test_zero_grad_runs_without_our_mode(armed):
    """torch's own reads and writes of every ``p.grad`` pay no dispatch into our mode; the program's mode still sees
    each of them, as often as without us."""
    start_training()
    model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(4)])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def clear():
        model(torch.ones(2, 4)).sum().backward()
        with Counting() as counting:
            optimizer.zero_grad()
            model.zero_grad()
        return counting.ours_on

    watched = clear()
    assert watched and not any(watched) and st.mode_on
    assert all(p.grad is None for p in model.parameters())
    sw.enabled = False
    assert len(clear()) == len(watched)
