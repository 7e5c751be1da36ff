"""core.leakage: split names, row hashing, and each leakage check with its counts and examples."""

import subprocess
import sys

import numpy as np
import pytest

from support.paths import PYHELPERS
from tensorsight.core import leakage
from tensorsight.core.leakage import SplitData, check_splits, check_stream_overlap, row_hashes, split_role


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


def test_padding_rows_of_batchified_token_streams_are_no_copies_but_a_copied_row_still_is():
    # val and test token streams batchified into rows of 9 ids, each padded with whole rows of the pad id 0
    rng = np.random.default_rng(2)
    val = np.zeros((48, 9), dtype=np.int64)
    test = np.zeros((48, 9), dtype=np.int64)
    val[:37], test[:36] = rng.integers(1, 40, (37, 9)), rng.integers(1, 40, (36, 9))
    report = check_splits({"val": SplitData("val", rows=val), "test": SplitData("test", rows=test)})
    assert not report.issues
    test[5] = val[20]  # one real sequence copied across
    issue = leakage.check_duplicates(SplitData("val", rows=val), SplitData("test", rows=test))
    assert issue is not None and issue.count == 1 and issue.examples == ((5, 20),)


def test_small_overlap_is_a_warning():
    train = np.arange(20000, dtype=np.int64).reshape(-1, 2)
    test = np.arange(20000, 40000, dtype=np.int64).reshape(-1, 2)
    test[0] = train[0]
    issue = leakage.check_duplicates(SplitData("train", rows=train), SplitData("test", rows=test))
    assert issue is not None and issue.count == 1 and issue.severity == "warning"


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


def test_core_leakage_imports_no_numpy_and_touches_no_user_object():
    probe = "import sys; import tensorsight.core.leakage; print('numpy' in sys.modules, 'torch' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, env={"PYTHONPATH": PYHELPERS}
    )
    assert done.stdout.split() == ["False", "False"], done.stderr
    assert not hasattr(leakage, "describe") and not hasattr(leakage, "split_from_parts")  # live objects: agent side


def _sentences(seed: int, count: int) -> np.ndarray:
    """A token stream of short sentences from a small grammar (subject, verb, object, optional place, end mark)."""
    rng = np.random.default_rng(seed)
    tokens: list[int] = []
    for _ in range(count):
        tokens += [int(rng.integers(0, 6)), int(rng.integers(6, 14)), int(rng.integers(14, 24))]
        if rng.random() < 0.5:
            tokens += [24, int(rng.integers(25, 30))]
        tokens.append(30)
    return np.array(tokens, dtype=np.int64)


def _batchify(stream: np.ndarray, batch: int) -> np.ndarray:
    rows = len(stream) // batch
    return stream[: rows * batch].reshape(batch, rows).T.copy()  # [rows, batch]: each column a stretch of text


def test_a_validation_stream_batchified_from_the_training_text_is_found_and_its_own_text_is_not():
    train_text, valid_text = _sentences(0, 3000), _sentences(1, 400)
    train = SplitData("train_data", rows=_batchify(train_text, 20))
    copied = SplitData("val_data", rows=_batchify(train_text, 10))
    issue = check_stream_overlap(train, copied)
    assert issue is not None and issue.check == "stream-overlap" and issue.severity == "error"
    assert issue.count >= 0.9 * issue.total and "val_data" in issue.message
    assert check_stream_overlap(train, SplitData("val_data", rows=_batchify(valid_text, 10))) is None
    report = check_splits({"train": train, "val": copied})
    assert [i.check for i in report.issues] == ["stream-overlap"]  # other batch size: no row is a copy


def test_integer_columns_that_cycle_count_or_are_sorted_are_no_text():
    hours = np.arange(5000) % 24
    train = SplitData("X_train", rows=np.stack([hours[:4000], np.arange(4000) // 7], axis=1))
    test = SplitData("X_test", rows=np.stack([hours[4000:], np.arange(4000, 5000) // 7], axis=1))
    assert check_stream_overlap(train, test) is None
    rng = np.random.default_rng(0)  # sequences that count by a stride, modulo a vocabulary: set by where they start
    starts, strides = rng.integers(0, 100, (128, 1)), rng.integers(1, 10, (128, 1))
    counting = (starts + strides * np.arange(32)) % 100
    assert check_stream_overlap(SplitData("train", rows=counting[:96]), SplitData("eval", rows=counting[96:])) is None
    users = np.sort(np.random.default_rng(0).integers(0, 300, 6000))
    assert check_stream_overlap(SplitData("train_users", rows=users), SplitData("test_users", rows=users[::3])) is None
