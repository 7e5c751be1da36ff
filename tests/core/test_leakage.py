"""core.leakage: split names, row hashing, and each leakage check with its counts and examples."""

import numpy as np
import pandas as pd
import pytest
import torch
from torch.utils.data import DataLoader, Subset, TensorDataset

from tensorsight.core import leakage
from tensorsight.core.leakage import SplitData, check_splits, describe, row_hashes, split_from_parts, split_role


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("X_train", ("train", "features")),
        ("y_test", ("test", "labels")),
        ("Xtrain", ("train", "features")),
        ("trainset", ("train", "data")),
        ("val_loader", ("val", "data")),
        ("valid_ds", ("val", "data")),
        ("df_test", ("test", "data")),
        ("test_idx", ("test", "ids")),
        ("t_train", ("train", "times")),
        ("TrainLoader", ("train", "data")),
        ("train", ("train", "data")),
        ("train_loss", None),
        ("test_accuracy", None),
        ("n_train", None),
        ("train_step", None),
        ("x_y_train", None),
        ("model", None),
    ],
)
def test_split_role(name, expected):
    assert split_role(name) == expected


def test_row_hashes_equal_rows_equal_hashes_and_wide_rows_are_bounded():
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((1000, 7)).astype(np.float32)  # 28 bytes: not a multiple of 8
    rows[500] = rows[3]
    hashes = row_hashes(rows)
    assert hashes.dtype == np.uint64
    assert hashes[500] == hashes[3]
    assert len(np.unique(hashes)) == 999
    wide = rng.integers(0, 255, (50, 3, 32, 32), dtype=np.uint8)  # 3072 bytes a row: a word subset is hashed
    assert len(np.unique(row_hashes(wide))) == 50


def test_duplicates_across_splits_with_counts_and_examples():
    rng = np.random.default_rng(1)
    train = rng.standard_normal((5000, 16)).astype(np.float32)
    test = rng.standard_normal((1000, 16)).astype(np.float32)
    test[10:60] = train[100:150]
    before_train, before_test = train.copy(), test.copy()
    report = check_splits({"train": SplitData("train", rows=train), "test": SplitData("test", rows=test)})
    (issue,) = report.issues
    assert (issue.check, issue.count, issue.total, issue.severity) == ("duplicates", 50, 1000, "error")
    assert issue.examples[0] == (10, 100)
    assert "50 of 1,000 (5.0%) test samples are exact copies of train samples" in issue.message
    assert np.array_equal(train, before_train) and np.array_equal(test, before_test)


def test_a_hash_match_is_confirmed_byte_for_byte(monkeypatch):
    # force every row to the same hash: only the byte compare can tell them apart
    monkeypatch.setattr(leakage, "row_hashes", lambda rows: np.zeros(len(rows), dtype=np.uint64))
    a = np.arange(20, dtype=np.float64).reshape(10, 2)
    b = np.array([[0.0, 1.0], [99.0, 98.0]])
    issue = leakage.check_duplicates(SplitData("a", rows=a), SplitData("b", rows=b))
    assert issue is not None and issue.count == 1


def test_small_overlap_is_a_warning():
    train = np.arange(20000, dtype=np.int64).reshape(-1, 2)
    test = np.arange(20000, 40000, dtype=np.int64).reshape(-1, 2)
    test[0] = train[0]
    issue = leakage.check_duplicates(SplitData("train", rows=train), SplitData("test", rows=test))
    assert issue is not None and issue.count == 1 and issue.severity == "warning"


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


def test_label_copy_linear_and_predictor_columns():
    rng = np.random.default_rng(2)
    n = 3000
    y = rng.integers(0, 3, n)
    X = rng.standard_normal((n, 6))
    X[:, 1] = y  # identical
    X[:, 2] = 2.5 * y - 1.0  # linear function of the label
    X[:, 4] = y * 10 + rng.integers(0, 2, n)  # 6 values, each with one label: determines it
    issues = leakage.check_label_columns(SplitData("X_train", rows=X, labels=y))
    found = {(i.check, i.column) for i in issues}
    assert found == {("label-copy", "column 1"), ("label-linear", "column 2"), ("label-predictor", "column 4")}
    severities = {i.check: i.severity for i in issues}
    assert severities == {"label-copy": "error", "label-linear": "error", "label-predictor": "warning"}


def test_no_label_issue_for_honest_features_or_unique_columns():
    rng = np.random.default_rng(3)
    n = 2000
    X = rng.standard_normal((n, 5))
    y = (X[:, 0] + X[:, 1] + rng.standard_normal(n) > 0).astype(np.int64)
    X[:, 3] = np.arange(n)  # unique id-like column: maps to labels trivially, must not count
    X[:, 4] = rng.integers(0, 4, n)  # categorical, unrelated
    assert leakage.check_label_columns(SplitData("X_train", rows=X, labels=y)) == []
    regression = X[:, 0] * 3 + rng.standard_normal(n)  # continuous target correlated but not exact
    assert leakage.check_label_columns(SplitData("X_train", rows=X, labels=regression)) == []


def test_temporal_leakage_counts_test_rows_before_the_last_training_row():
    times = np.arange("2024-01-01", "2024-04-10", dtype="datetime64[D]")
    train = SplitData("train", times=times[:80])
    good = SplitData("test", times=times[80:])
    assert leakage.check_temporal(train, good) is None
    shuffled = SplitData("train", times=times[::2])
    bad = SplitData("test", times=times[1::2])
    issue = leakage.check_temporal(shuffled, bad)
    assert issue is not None and issue.count == 49 and issue.total == 50 and issue.check == "temporal"


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


def test_row_cap_and_budget(monkeypatch):
    monkeypatch.setattr(leakage, "MAX_ROWS", 100)
    rows = np.arange(1000, dtype=np.float64).reshape(-1, 1)
    report = check_splits({"train": SplitData("train", rows=rows), "test": SplitData("test", rows=rows[:10])})
    assert report.rows == {"train": 1000, "test": 10}
    assert any("every 10th row of 1,000" in note for note in report.notes)
    report = check_splits(
        {"train": SplitData("train", rows=rows), "test": SplitData("test", rows=rows[:10])}, budget_seconds=0.0
    )
    assert report.issues == [] and any("over the 0 s budget" in note for note in report.notes)


def test_report_format_and_truthiness():
    clean = check_splits(
        {"train": SplitData("train", rows=np.zeros((3, 2))), "test": SplitData("test", rows=np.ones((3, 2)))}
    )
    assert not clean and "no leakage found" in clean.format()
