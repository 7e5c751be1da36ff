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
