"""core.written_at: the line that computed a call's argument, on code shaped like public training scripts."""

import pytest

from tensorsight.core.written_at import argument_written_at

pytestmark = pytest.mark.numpy_only  # also run under Python 3.10, 3.12 and 3.13 (scripts/test.sh)

SCRIPT = """import torch.nn.functional as F


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i : i + seq_len]
    target = source[i : i + seq_len].reshape(-1)
    return data, target


def pick(source, i):
    if i % 2:
        return source[i], source[i + 1]
    return source[i + 1], source[i]


def train_epoch(model, source, criterion, loader):
    for i in range(0, 100, 35):
        data, targets = get_batch(source, i, 35)
        labels = targets
        loss = criterion(model(data), labels)
        loss = F.cross_entropy(
            model(data),
            target=targets,
        )
        x, y = pick(source, i)
        loss = criterion(model(x), y)
        a, b = source[0], source[0].clone()
        loss = criterion(model(a), b)
    for data, target in loader:
        loss = criterion(model(data), target)
        loss = criterion(model(data), data.reshape(-1))
    return criterion(model(source), source)
"""


def test_a_target_made_in_a_helper_is_found_at_the_line_that_made_it():
    assert argument_written_at(SCRIPT, 21, 1) == 7  # alias -> tuple unpacking -> the helper's return -> its line
    assert argument_written_at(SCRIPT, 24, 1, "target") == 7  # by keyword, in a call spread over lines
    assert argument_written_at(SCRIPT, 29, 1) == 28  # a tuple written in place: its own line


def test_several_returns_stop_at_the_helpers_call_and_what_no_assignment_wrote_gives_no_line():
    assert argument_written_at(SCRIPT, 27, 1) == 26  # a helper with two returns: the line that called it
    assert argument_written_at(SCRIPT, 31, 1) is None  # a loop variable
    assert argument_written_at(SCRIPT, 32, 1) is None  # computed in the call itself
    assert argument_written_at(SCRIPT, 33, 1) is None  # a parameter
    assert argument_written_at(SCRIPT, 3, 1) is None  # no call there
    assert argument_written_at("def broken(:\n", 1, 1) is None


GETITEM = """import torch


class Windows:
    def __getitem__(self, i):
        end = i + 12
        window = self.series[i:end]
        x = window
        return x, self.series[end, 0]


class Decorated:
    @staticmethod
    @some.decorator
    def make(i):
        if i:
            return i, i
        return i, 0
"""


def test_what_a_function_returns_is_found_where_it_was_written():
    from tensorsight.core.written_at import returned_written_at

    assert returned_written_at(GETITEM, 5, 0) == 7  # through the alias x = window
    assert returned_written_at(GETITEM, 5, 1) == 9  # written in the return itself
    assert returned_written_at(GETITEM, 13, 0) is None  # two returns (found by its first decorator's line)
    assert returned_written_at(GETITEM, 4, 0) is None  # no function starts there
    assert returned_written_at("def broken(:\n", 1, 0) is None
