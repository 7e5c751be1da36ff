"""agent.leakage.splits: the data of a split read from live objects (tensors, datasets, loaders, DataFrames,
lists), and the checks of core.leakage run on what it read."""

import numpy as np
import pandas as pd
import torch
from torch.utils.data import DataLoader, Subset, TensorDataset

from tensorsight.agent.leakage.splits import describe, split_from_parts
from tensorsight.core import leakage
from tensorsight.core.leakage import SplitData, check_splits


def test_id_overlap_and_subset_indices():
    issue = leakage.check_id_overlap(
        SplitData("train", ids=np.arange(0, 800)), SplitData("test", ids=np.arange(700, 1000))
    )
    assert issue is not None and (issue.count, issue.total) == (100, 300)
    assert issue.examples == (700, 701, 702, 703, 704)
    base = TensorDataset(torch.arange(100.0).reshape(50, 2))
    a = describe(Subset(base, list(range(0, 30))), "a")
    b = describe(Subset(base, list(range(25, 50))), "b")
    assert a is not None and b is not None and a.rows is not None
    issue = leakage.check_id_overlap(a, b)
    assert issue is not None and issue.count == 5 and "dataset indices" in issue.message
    other = describe(Subset(TensorDataset(torch.zeros(50, 2)), list(range(25, 50))), "c")
    assert other is not None and leakage.check_id_overlap(a, other) is None


def test_string_ids_and_object_rows():
    issue = leakage.check_id_overlap(
        SplitData("train", ids=np.array(["u1", "u2", "u3"], dtype=object)),
        SplitData("test", ids=np.array(["u3", "u9"], dtype=object)),
    )
    assert issue is not None and issue.count == 1 and issue.examples == ("u3",)
    texts_train = split_from_parts("train", ["a cat", "a dog", "a bird", "the end"])
    texts_test = split_from_parts("test", ["a dog", "new text"])
    issue = leakage.check_duplicates(texts_train, texts_test)
    assert issue is not None and issue.count == 1


def test_dataframes_use_id_time_and_label_columns():
    days = np.datetime64("2024-01-01") + np.arange(200).astype("timedelta64[D]")
    frame = pd.DataFrame(
        {
            "user_id": np.arange(200) % 151,
            "date": days,
            "amount": np.linspace(0, 1, 200),
            "target": np.arange(200) % 2,
        }
    )
    train_df, test_df = frame.iloc[::2], frame.iloc[1::2]
    splits = {"train": describe(train_df, "train_df"), "test": describe(test_df, "test_df")}
    report = check_splits(splits)
    checks = {i.check: i for i in report.issues}
    assert set(checks) == {"id-overlap", "temporal"}
    expected = int(np.isin(test_df["user_id"], train_df["user_id"]).sum())
    assert expected > 0 and checks["id-overlap"].count == expected
    dup = frame.copy()
    dup.loc[0, "amount"] = frame.loc[1, "amount"]
    split = describe(dup.iloc[[0]], "a")
    other = describe(dup.iloc[[1]], "b")
    assert split is not None and other is not None
    assert leakage.check_duplicates(split, other) is not None  # same features, different id/date/label


def test_describe_understands_torch_objects_and_pairs():
    X = torch.randn(40, 3)
    y = torch.randint(0, 2, (40,))
    ds = TensorDataset(X, y)
    for obj in (ds, DataLoader(ds, batch_size=8), (X, y)):
        split = describe(obj, "train")
        assert split is not None and split.rows.shape == (40, 3) and split.labels.shape == (40,)
    assert describe(torch.empty(4, 3, device="meta"), "m") is None
    assert describe(42, "n") is None


def test_describe_iterates_a_plain_dataset_only_when_allowed():
    class Squares(torch.utils.data.Dataset):
        def __len__(self):
            return 10

        def __getitem__(self, i):
            return torch.tensor([float(i * i)]), i % 2

    assert describe(Squares(), "train") is None
    split = describe(Squares(), "train", allow_iteration=True)
    assert split is not None and split.row_keys is not None and len(split.row_keys) == 10
    assert split.labels is not None and list(split.labels[:3]) == [0, 1, 0]


def test_without_iteration_describe_runs_no_user_code():
    calls = []

    class Computed(torch.utils.data.Dataset):
        def __len__(self):
            calls.append("len")
            return 10

        def __getitem__(self, i):
            calls.append("getitem")
            return torch.zeros(2)

        def __getattr__(self, name):
            calls.append(name)
            return torch.zeros(10, 2)

        @property
        def data(self):
            calls.append("data")
            return torch.zeros(10, 2)

    assert describe(Computed(), "train") is None
    assert describe(DataLoader(Computed(), batch_size=2), "train") is None
    assert calls == []
    split = describe(Computed(), "train", allow_iteration=True)  # the toolbox: the user asked for it
    assert split is not None and len(split.row_keys) == 10 and "getitem" in calls


def _report(train, test):
    return check_splits({"train": describe(train, "train"), "test": describe(test, "test")})


def test_slices_of_one_dataset_overlap_by_their_rows_and_disjoint_slices_do_not():
    X = torch.randn(1000, 4)
    y = torch.randint(0, 2, (1000,))
    ds = TensorDataset(X, y)
    for train, test in (
        (ds[:800], ds[700:]),  # TensorDataset sliced: a (features, labels) pair of views
        (TensorDataset(X[:800], y[:800]), TensorDataset(X[700:], y[700:])),
        (X[:800], X[700:]),
        (X.numpy()[:800], X.numpy()[700:]),
    ):
        report = _report(train, test)
        (issue,) = report.issues  # the equal content of the shared rows is not reported twice
        assert (issue.check, issue.count, issue.total) == ("id-overlap", 100, 300)
        assert issue.examples == (700, 701, 702, 703, 704) and "same rows of one array" in issue.message
    assert not _report(ds[:800], ds[800:]).issues
    assert not _report(X.numpy()[:800], X.numpy()[800:]).issues


def test_subsets_and_index_arrays_of_shared_tensors():
    X = torch.randn(100, 3)
    base = TensorDataset(X)
    train, test = torch.utils.data.random_split(base, [70, 30], generator=torch.Generator().manual_seed(0))
    assert not _report(train, test).issues  # a proper random_split
    (issue,) = _report(Subset(base, list(range(0, 60))), Subset(base, np.arange(50, 100))).issues
    assert issue.count == 10 and "dataset indices" in issue.message
    # two datasets wrapping the same tensor, each a Subset of its own: the shared rows still show
    (issue,) = _report(Subset(TensorDataset(X), range(0, 60)), Subset(TensorDataset(X), range(55, 100))).issues
    assert issue.count == 5 and issue.examples == (55, 56, 57, 58, 59)
    # a transpose's rows are the columns: another identity; a view starting mid-row has none
    assert describe(X.T, "t").storage != describe(X, "x").storage
    assert describe(X[:, 1:], "mid").storage is None


class _Window(torch.utils.data.Dataset):
    def __init__(self, features, targets, start, stop):
        self.features, self.targets, self.start, self.stop = features, targets, start, stop

    def __len__(self):
        raise AssertionError("the watch must not run user code")

    def __getitem__(self, index):
        raise AssertionError("the watch must not run user code")


class _Indexed(torch.utils.data.Dataset):
    def __init__(self, images, labels, indices):
        self.images, self.labels, self.sample_idx = images, labels, indices

    def __len__(self):
        raise AssertionError("the watch must not run user code")

    def __getitem__(self, index):
        raise AssertionError("the watch must not run user code")


def test_custom_datasets_over_shared_tensors_are_read_from_their_stored_attributes():
    features, targets = torch.randn(600, 6), torch.randn(600)
    train = describe(_Window(features, targets, 0, 500), "train")
    assert train is not None and train.rows.shape == (500, 6) and train.labels.shape == (500,)
    (issue,) = _report(_Window(features, targets, 0, 500), _Window(features, targets, 400, 600)).issues
    assert (issue.check, issue.count, issue.total, issue.examples[0]) == ("id-overlap", 100, 200, 400)
    assert not _report(_Window(features, targets, 0, 500), _Window(features, targets, 500, 600)).issues
    images, labels = torch.randn(50, 2, 2), torch.randint(0, 3, (50,))
    (issue,) = _report(_Indexed(images, labels, np.arange(0, 30)), _Indexed(images, labels, [25, 26, 40])).issues
    assert (issue.count, issue.examples) == (2, (25, 26))
    assert not _report(_Indexed(images, labels, np.arange(0, 30)), _Indexed(images, labels, [30, 31])).issues


def test_one_integer_per_sample_is_no_duplicate_evidence():
    tokens = torch.randint(0, 50, (2000,))
    train, val = tokens[:1800].clone(), tokens[1800:].clone()  # copies: no shared rows, only equal token values
    assert not _report(train, val).issues


class _ChoosesItsRows(torch.utils.data.Dataset):
    def __init__(self, split):
        features = torch.arange(120.0).reshape(60, 2)
        rows = slice(0, 40) if split == "train" else slice(30, 60)
        self.features = features[rows]

    def __len__(self):
        raise AssertionError("the watch must not run user code")

    def __getitem__(self, index):
        raise AssertionError("the watch must not run user code")


def test_a_dataset_that_chooses_its_rows_itself_is_reported_at_that_line():
    line = _ChoosesItsRows.__init__.__code__.co_firstlineno + 2
    split = describe(_ChoosesItsRows("val"), "val")
    assert split is not None and split.made_at == (__file__, line)
    (issue,) = _report(_ChoosesItsRows("train"), _ChoosesItsRows("val")).issues
    assert (issue.check, issue.count) == ("duplicates", 10)  # two tensors of equal content: found by content
    # a dataset storing what it was given chose nothing itself: the split is made where it is built
    assert describe(_Window(torch.ones(5, 2), torch.ones(5), 0, 5), "w").made_at is None


class Windows(torch.utils.data.Dataset):
    """Stores a per-class table before its samples, under names no list of known names has."""

    def __init__(self, signal, activity, positions):
        self.class_counts = torch.bincount(activity[positions], minlength=4).float()
        self._records = signal[positions].clone()
        self._activity_labels = activity[positions].clone()

    def __len__(self):
        return len(self._activity_labels)

    def __getitem__(self, index):
        raise AssertionError("the watch must not call __getitem__")


class Unsized(torch.utils.data.Dataset):
    """No readable __len__: the length most of its arrays share decides which ones are samples."""

    def __init__(self, signal, activity):
        self.mean = signal.mean(dim=0)
        self.samples_tensor = signal
        self.classes_of_rows = activity

    def __len__(self):
        return int(self.samples_tensor.shape[0]) if self.samples_tensor is not None else 0


def test_a_custom_dataset_is_read_by_its_sample_count_not_by_attribute_names():
    signal = torch.randn(40, 3, 8)
    activity = torch.arange(40) % 4
    data = describe(Windows(signal, activity, torch.arange(10, 40)), "test")
    assert data is not None and data.rows.shape == (30, 3, 8) and data.labels.tolist() == activity[10:].tolist()
    train = describe(Windows(signal, activity, torch.arange(0, 20)), "train")
    issue = leakage.check_duplicates(train, data)
    assert issue is not None and issue.count == 10
    unsized = describe(Unsized(signal, activity), "other")
    assert unsized is not None and unsized.rows.shape == (40, 3, 8) and unsized.labels is None


def test_a_boolean_mask_stands_for_the_positions_it_selects():
    train_mask = torch.zeros(20, dtype=torch.bool)
    train_mask[:8] = True
    test_mask = ~torch.zeros(20, dtype=torch.bool)
    train = split_from_parts("data.train_mask", ids=train_mask)
    test = split_from_parts("data.test_mask", ids=test_mask)
    assert train.ids.tolist() == list(range(8)) and train.ids_from_mask
    issue = leakage.check_id_overlap(train, test)
    assert issue is not None and (issue.count, issue.total) == (8, 20) and "masks overlap" in issue.message
    disjoint = split_from_parts("data.test_mask", ids=~train_mask)
    assert leakage.check_id_overlap(train, disjoint) is None


def test_a_held_out_loader_reading_training_rows_is_known_by_storage_and_subsets_by_dataset():
    x = torch.randn(30, 4)
    train_x, test_x = x[:20], x[20:]
    train = split_from_parts("train_x", train_x)
    on_train = split_from_parts("test_loader", DataLoader(TensorDataset(train_x), batch_size=4))
    issue = leakage.check_reads_training(train, on_train, "test_x")
    assert issue is not None and issue.check == "eval-on-train" and (issue.count, issue.total) == (20, 20)
    assert "test_x" in issue.message and issue.severity == "error"
    on_test = split_from_parts("test_loader", DataLoader(TensorDataset(test_x), batch_size=4))
    assert leakage.check_reads_training(train, on_test) is None
    copied = split_from_parts("test_loader", DataLoader(TensorDataset(train_x.clone()), batch_size=4))
    assert leakage.check_reads_training(train, copied) is None  # another array: the content checks' business
    base = TensorDataset(x)
    subset_train = split_from_parts("train_set", Subset(base, list(range(0, 20))))
    subset_loader = split_from_parts("val_loader", DataLoader(Subset(base, list(range(0, 20)))))
    found = leakage.check_reads_training(subset_train, subset_loader)
    assert found is not None and found.count == 20
    rows = np.arange(60.0).reshape(30, 2)
    assert leakage.check_reads_training(split_from_parts("a", rows[:20]), split_from_parts("b", rows[5:10])).count == 5


class GivenRows(torch.utils.data.Dataset):
    def __init__(self, features, rows):
        self.features = features[rows]

    def __len__(self):
        return len(self.features)


def test_rows_given_by_the_caller_are_chosen_where_the_dataset_is_built():
    data = describe(GivenRows(torch.randn(10, 2), torch.arange(5)), "test")
    assert data is not None and data.made_at is None
