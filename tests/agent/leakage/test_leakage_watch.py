"""leakage_watch: recognising the splits in a script's namespace, checking them once, pointing at where they are built.

In-process on a namespace built here (the doctor examples test covers the whole path through a real script).
"""

import textwrap

import numpy as np
import torch
from torch.utils.data import DataLoader, Subset, TensorDataset

from tensorsight.agent.leakage import watch as leakage_watch
from tensorsight.agent.runtime import events

SCRIPT = textwrap.dedent(
    """\
    import numpy as np
    X = load()
    y = labels()
    X_train, y_train = X[:80], y[:80]
    X_test = X[60:]
    y_test = y[60:]
    a = Subset(base, range(0, 50))
    b = Subset(base, range(40, 100))
    def train(model):
        pass
    n_train = 80
    """
)


def collect(scopes):
    found = []
    unsubscribe = events.subscribe(lambda e: found.append(e["finding"]) if e["type"] == "finding" else None)
    try:
        leakage_watch.check_scopes(scopes)
    finally:
        unsubscribe()
    return found


def test_named_splits_and_subsets_are_checked_once_at_their_lines(tmp_path):
    path = tmp_path / "train_script.py"
    path.write_text(SCRIPT)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 4)).astype(np.float32)
    y = rng.integers(0, 2, 100)
    X[:, 2] = y
    base = TensorDataset(torch.arange(200.0).reshape(100, 2))
    scope = {
        "X": X,
        "y": y,
        "X_train": X[:80],
        "y_train": y[:80],
        "X_test": X[60:],
        "y_test": y[60:],
        "a": Subset(base, range(0, 50)),
        "b": Subset(base, range(40, 100)),
        "train": lambda model: None,  # a function named like a split is not data
        "n_train": 80,
        "train_loader": DataLoader(TensorDataset(torch.from_numpy(X[:80])), batch_size=8),
    }
    findings = collect([(str(path), scope, None)])
    by_line = {(f["details"]["check"], f["line"]): f for f in findings}
    assert set(by_line) == {("id-overlap", 5), ("label-copy", 4), ("id-overlap", 8)}
    # X_train and X_test are slices of one array: rows 60-79 are in both (found by row, not reported twice)
    assert (
        by_line["id-overlap", 5]["details"]["count"] == 20 and by_line["id-overlap", 5]["details"]["examples"][0] == 60
    )
    assert by_line["label-copy", 4]["details"]["column"] == "column 2"
    assert by_line["id-overlap", 8]["details"]["count"] == 10
    assert all(f["kind"] == "leakage" and f["file"] == str(path) for f in findings)
    assert collect([(str(path), scope, None)]) == []  # checked once


def test_collect_splits_prefers_arrays_over_loaders_and_ignores_non_data():
    ds = TensorDataset(torch.zeros(10, 2))
    roles, subsets = leakage_watch.collect_splits(
        [("f.py", {"train_loader": DataLoader(ds), "train_ds": ds, "val_size": 3, "test": print}, None)]
    )
    assert roles == {"train": {"data": ("train_ds", ds, "f.py")}}
    assert subsets == []


def test_assignment_line_finds_tuple_targets_and_loops(tmp_path):
    path = tmp_path / "s.py"
    path.write_text("x = 1\nfor batch in data:\n    (X_train, X_val), other = split()\n")
    assert leakage_watch.assignment_line(str(path), "X_val") == 3
    assert leakage_watch.assignment_line(str(path), "batch") == 2
    assert leakage_watch.assignment_line(str(path), "missing") == 1


class Counting:
    """A user global whose ``__getattr__`` (and one property) count every call: the watch must make none."""

    calls = 0

    def __getattr__(self, name):
        Counting.calls += 1
        return 1  # answers every name: `hasattr(x, "dataset")` would say yes to anything

    @property
    def shape(self):
        Counting.calls += 1
        return (10, 2)


class Exploding:
    """A user global whose attribute access raises something other than AttributeError."""

    def __getattr__(self, name):
        raise RuntimeError(f"{name}: not now")

    def __len__(self):
        raise RuntimeError("no length either")


def test_the_watch_runs_no_user_code_and_a_raising_global_does_not_stop_it(tmp_path):
    path = tmp_path / "script.py"
    path.write_text("X_train = load()\nX_test = X_train[:5]\nweird_train = Counting()\nodd_test = Exploding()\n")
    rows = np.arange(40.0).reshape(20, 2)
    Counting.calls = 0
    scope = {
        "counting": Counting(),
        "weird_train": Counting(),
        "exploding": Exploding(),
        "odd_test": Exploding(),
        "X_train": rows,
        "X_test": rows[:5].copy(),
    }
    findings = collect([(str(path), scope, None)])
    assert Counting.calls == 0
    duplicates = [f for f in findings if f["details"]["check"] == "duplicates"]
    assert len(duplicates) == 1 and duplicates[0]["details"]["count"] == 5 and duplicates[0]["line"] == 2


SEQUENCE_SCRIPT = textwrap.dedent(
    """\
    data = sine_waves()
    X = data[:, :-1]
    input, target = data[3:, :-1], data[3:, 1:]
    test_input, test_target = data[:5, :-1], data[:5, 1:]
    batch = data[0:2, :-1]
    """
)


def test_a_held_out_split_sliced_from_the_array_an_unnamed_training_split_also_comes_from(tmp_path):
    path = tmp_path / "sequence.py"
    path.write_text(SEQUENCE_SCRIPT)
    data = torch.randn(40, 12, dtype=torch.float64)
    scope = {
        "data": data,
        "X": data[:, :-1],  # the whole array's rows: where the split was cut from, not a partner
        "input": data[3:, :-1],
        "target": data[3:, 1:],
        "test_input": data[:5, :-1],
        "test_target": data[:5, 1:],
        "batch": data[0:2, :-1],  # smaller than the held-out split: not a split
    }
    (finding,) = collect([(str(path), scope, None)])
    assert (finding["kind"], finding["line"]) == ("leakage", 4)
    assert finding["details"]["splits"] == ["input", "test_input"] and finding["details"]["examples"] == [3, 4]
    clean = {**scope, "input": data[5:, :-1], "target": data[5:, 1:]}
    leakage_watch._checked.clear()
    assert collect([(str(path), clean, None)]) == []
