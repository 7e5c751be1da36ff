"""leakage_watch: recognising the splits in a script's namespace, checking them once, pointing at where they are built.

In-process on a namespace built here (the doctor examples test covers the whole path through a real script).
"""

import textwrap

import numpy as np
import torch
from torch.utils.data import DataLoader, Subset, SubsetRandomSampler, TensorDataset

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


LOADER_SCRIPT = textwrap.dedent(
    """\
    x, y = make()
    train_x, train_y = x[:80], y[:80]
    test_x, test_y = x[80:], y[80:]
    train_set = TensorDataset(train_x, train_y)
    test_set = TensorDataset(test_x, test_y)
    test_loader = DataLoader(train_set, batch_size=10)
    """
)


def test_a_test_loader_built_on_the_training_set_is_found_though_test_x_exists(tmp_path):
    path = tmp_path / "loaders.py"
    path.write_text(LOADER_SCRIPT)
    x, y = torch.randn(100, 3), torch.arange(100) % 2
    train_set = TensorDataset(x[:80], y[:80])
    test_set = TensorDataset(x[80:], y[80:])
    scope = {
        "train_x": x[:80],
        "train_y": y[:80],
        "test_x": x[80:],
        "test_y": y[80:],
        "train_set": train_set,
        "test_set": test_set,
        "test_loader": DataLoader(train_set, batch_size=10),
    }
    leakage_watch._checked.clear()
    (finding,) = collect([(str(path), scope, None)])
    assert (finding["line"], finding["details"]["check"], finding["details"]["count"]) == (6, "eval-on-train", 80)
    assert "test_x" in finding["message"]
    leakage_watch._checked.clear()
    assert collect([(str(path), {**scope, "test_loader": DataLoader(test_set, batch_size=10)}, None)]) == []
    # loaders over one dataset that read disjoint rows through their samplers
    everything = TensorDataset(x, y)
    samplers = {
        "dataset": everything,
        "train_loader": DataLoader(everything, sampler=SubsetRandomSampler(range(0, 80))),
        "test_loader": DataLoader(everything, sampler=SubsetRandomSampler(range(80, 100))),
    }
    leakage_watch._checked.clear()
    assert collect([(str(path), samplers, None)]) == []
    samplers["test_loader"] = DataLoader(everything, sampler=SubsetRandomSampler(range(70, 100)))
    leakage_watch._checked.clear()
    (overlap,) = collect([(str(path), samplers, None)])
    assert overlap["details"]["count"] == 10
    # a loader over the split's own data that overlaps the training rows in part: one finding, on that data
    overlapping = TensorDataset(x[60:], y[60:])
    partial = {**scope, "test_x": x[60:], "test_set": overlapping, "test_loader": DataLoader(overlapping)}
    leakage_watch._checked.clear()
    (finding,) = collect([(str(path), partial, None)])
    assert (finding["line"], finding["details"]["check"]) == (3, "id-overlap")


class Graph:
    """Splits kept as attributes of one object, as graph libraries keep their masks."""

    def __init__(self, nodes):
        self.x = torch.randn(nodes, 4)
        self.train_mask = torch.zeros(nodes, dtype=torch.bool)
        self.train_mask[:10] = True
        self.val_mask = torch.zeros(nodes, dtype=torch.bool)
        self.val_mask[10:20] = True


MASK_SCRIPT = textwrap.dedent(
    """\
    data = load()
    data.test_mask = ~data.val_mask
    """
)


class ComputedDict:
    """A user object whose ``__dict__`` is a property: the watch must not run it."""

    @property
    def __dict__(self):
        raise AssertionError("the watch ran a user property")


def test_split_masks_stored_on_an_object_are_compared_and_reported_where_assigned(tmp_path):
    path = tmp_path / "graph.py"
    path.write_text(MASK_SCRIPT)
    data = Graph(40)
    data.test_mask = ~data.val_mask
    leakage_watch._checked.clear()
    (finding,) = collect([(str(path), {"data": data, "odd": ComputedDict()}, None)])
    assert finding["line"] == 2 and finding["details"]["splits"] == ["data.train_mask", "data.test_mask"]
    assert finding["details"]["count"] == 10
    data.test_mask = ~(data.train_mask | data.val_mask)
    leakage_watch._checked.clear()
    assert collect([(str(path), {"data": data}, None)]) == []
