"""The data-side evidence of the leakage watch: whole samples compared as their (input, target) tuple, normalization
statistics computed over every split, training loaders reading label-grouped data in stored order, and the lines the
findings are placed at (where the statistics or the held-out indices are computed).

In-process, on arrays and a script source written here; the realistic suite (families churn_scaling and
shape_segmentation) runs the same checks through the doctor on whole programs.
"""

import textwrap

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

from tensorsight.agent.leakage import order, pairing, sources
from tensorsight.agent.leakage import watch as leakage_watch
from tensorsight.agent.leakage.splits import describe
from tensorsight.agent.runtime import events
from tensorsight.core.leakage import SplitData, check_duplicates
from tensorsight.core.split_statistics import statistics_over_all_splits

SCRIPT = textwrap.dedent(
    """\
    import numpy as np

    def prepare(table, labels):
        mean, std = table.mean(axis=0), table.std(axis=0)
        order = np.random.default_rng(0).permutation(len(table))
        train_idx = order[:400]
        test_idx = np.random.default_rng(1).choice(len(table), 100, replace=False)
        X_train, X_test = table[train_idx], table[test_idx]
        X_train, X_test = (X_train - mean) / std, (X_test - mean) / std
        train_set = TensorDataset(*(a[train_idx] for a in (table, labels)))
        test_set = TensorDataset(*(a[test_idx] for a in (table, labels)))
        train_loader = DataLoader(train_set, batch_size=32)
        return X_train, X_test
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


def _images_and_masks(n, seed):
    rng = np.random.default_rng(seed)
    masks = np.zeros((n, 1, 8, 8), dtype=np.float32)
    masks[np.arange(n) % 2 == 0, :, 2:6, 2:6] = 1.0  # two masks only: every mask has copies in any other split
    images = masks + rng.normal(0, 0.5, masks.shape).astype(np.float32)
    return images, masks


def test_samples_are_compared_as_their_whole_tuple_not_tensor_by_tensor():
    train_images, train_masks = _images_and_masks(200, 0)
    val_images, val_masks = _images_and_masks(50, 1)
    train = describe(TensorDataset(torch.from_numpy(train_masks), torch.from_numpy(train_images)), "train_set")
    val = describe(TensorDataset(torch.from_numpy(val_masks), torch.from_numpy(val_images)), "val_set")
    assert train is not None and val is not None
    assert check_duplicates(train, val) is None  # equal masks, other images: no sample is shared
    copied_images = val_images.copy()
    copied_images[:10] = train_images[:10]
    copied_masks = val_masks.copy()
    copied_masks[:10] = train_masks[:10]
    leaked = describe(TensorDataset(torch.from_numpy(copied_masks), torch.from_numpy(copied_images)), "val_set")
    issue = check_duplicates(train, leaked)
    assert issue is not None and issue.count == 10 and issue.examples[0] == (0, 0)


def test_scalar_id_tuples_are_no_evidence_but_a_measured_value_makes_them_samples():
    users, items = np.arange(100) % 7, np.arange(100) % 5
    ids_only = SplitData("a", parts=(users, items))
    assert check_duplicates(ids_only, SplitData("b", parts=(users[:20], items[:20]))) is None
    ratings = np.linspace(0, 1, 100, dtype=np.float32)
    a = SplitData("a", parts=(users, items, ratings))
    b = SplitData("b", parts=(users[:20], items[:20], ratings[:20] + 1.0))
    assert check_duplicates(a, b) is None
    issue = check_duplicates(a, SplitData("b", parts=(users[:20], items[:20], ratings[:20])))
    assert issue is not None and issue.count == 20


def _table(n=500, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(50, 12, (n, 5)) * rng.uniform(0.5, 3, 5)).astype(np.float32)


def test_statistics_over_all_rows_are_told_from_training_statistics():
    table = _table()
    train, test = table[:400], table[400:]
    everything = (table - table.mean(0)) / table.std(0)
    issue = statistics_over_all_splits(
        SplitData("X_train", rows=everything[:400]), [SplitData("X_test", rows=everything[400:])]
    )
    assert issue is not None and issue.check == "statistics-over-all-splits"
    assert issue.count == 5 and issue.splits[-1] == "X_train"
    # statistics of the training rows: the training rows sit at 0 and 1, the union does not
    mean, std = train.mean(0), train.std(0)
    own = statistics_over_all_splits(
        SplitData("X_train", rows=(train - mean) / std), [SplitData("X_test", rows=(test - mean) / std)]
    )
    assert own is None
    # raw data and data scaled by fixed constants are not standardized over the union
    assert statistics_over_all_splits(SplitData("X_train", rows=train), [SplitData("X_test", rows=test)]) is None
    scaled = (table - 50.0) / 12.0
    assert (
        statistics_over_all_splits(SplitData("X_train", rows=scaled[:400]), [SplitData("X_test", rows=scaled[400:])])
        is None
    )
    # each split standardized on its own statistics: the training rows are at 0 and 1 themselves
    alone = [(part - part.mean(0)) / part.std(0) for part in (train, test)]
    assert statistics_over_all_splits(SplitData("X_train", rows=alone[0]), [SplitData("X_test", rows=alone[1])]) is None


def test_the_source_lines_are_where_the_statistics_and_the_held_out_indices_are_computed(tmp_path):
    path = tmp_path / "prepare.py"
    path.write_text(SCRIPT)
    assert sources.statistics_line(str(path), "X_train") == 4
    assert sources.index_line(str(path), "test_set", 11) == 7
    assert sources.index_line(str(path), "X_test", 8) == 7
    assert sources.index_line(str(path), "train_loader", 12) is None  # built on a dataset, not by indexing


def test_the_watch_reports_statistics_and_resampled_rows_where_they_are_computed(tmp_path):
    path = tmp_path / "prepare.py"
    path.write_text(SCRIPT)
    table = _table(600, 1)
    labels = (table[:, 0] > 50).astype(np.float32)
    shuffled = np.random.default_rng(0).permutation(600)
    mean, std = table.mean(axis=0), table.std(axis=0)
    standardized = {"X_train": (table[shuffled[:400]] - mean) / std, "X_test": (table[shuffled[400:]] - mean) / std}
    findings = collect([(str(path), standardized, None)])
    assert [(f["details"]["check"], f["line"]) for f in findings] == [("statistics-over-all-splits", 4)]
    train_idx, test_idx = shuffled[:400], np.random.default_rng(1).choice(600, 100, replace=False)
    tensors = (torch.from_numpy(table), torch.from_numpy(labels))
    resampled = {
        "train_set": TensorDataset(*(a[train_idx] for a in tensors)),
        "test_set": TensorDataset(*(a[test_idx] for a in tensors)),
    }
    findings = collect([(str(path), resampled, None)])
    # test_set's rows are drawn apart from train_set's: found as copied samples, fixed where test_idx is drawn
    assert [(f["details"]["check"], f["line"]) for f in findings] == [("duplicates", 7)]
    assert all(f["kind"] == "leakage" for f in findings)


def test_label_grouped_data_read_in_stored_order_is_found_and_shuffling_or_mixed_labels_are_not(tmp_path):
    assert order.grouped_labels(np.repeat([0, 1, 2], 40)) == ("grouped", 3)
    assert order.grouped_labels(np.tile([0, 1], 60)) is None
    assert order.grouped_labels(np.sort(np.random.default_rng(0).normal(size=200))) == ("sorted", 0)
    assert order.grouped_labels(np.random.default_rng(0).normal(size=200)) is None
    features = torch.randn(120, 4)
    grouped = TensorDataset(features, torch.repeat_interleave(torch.tensor([0.0, 1.0]), 60))
    found = order.unshuffled_grouped("train_loader", DataLoader(grouped, batch_size=16))
    assert found is not None and found[1]["order"] == "grouped" and "shuffle=True" in found[0]
    assert order.unshuffled_grouped("train_loader", DataLoader(grouped, batch_size=16, shuffle=True)) is None
    mixed = TensorDataset(features, torch.tensor([0.0, 1.0]).repeat(60))
    assert order.unshuffled_grouped("train_loader", DataLoader(mixed, batch_size=16)) is None
    # through the watch: reported at the line that builds the training loader, once
    path = tmp_path / "prepare.py"
    path.write_text(SCRIPT)
    scope = {"train_loader": DataLoader(grouped, batch_size=16), "loader": None}
    findings = [f for f in collect([(str(path), scope, None)]) if f["kind"] == "training-logic"]
    assert [(f["line"], f["details"]["check"]) for f in findings] == [(12, "unshuffled-grouped-labels")]
    assert collect([(str(path), scope, None)]) == []


PAIRS_MODULE = textwrap.dedent(
    """\
    import torch
    from torch.utils.data import Dataset

    class Pairs(Dataset):
        def __init__(self, images, masks, both=True):
            self.masks = masks
            self.images = images
            self.both = both

        def __len__(self):
            return len(self.images)

        def __getitem__(self, index):
            image, mask = self.images[index], self.masks[index]
            if torch.rand(1).item() < 0.5:
                image = image.flip(-1)
                if self.both:
                    mask = torch.flip(mask, dims=[-1])
            return image, mask

    class ImageOnly(Pairs):
        def __getitem__(self, index):
            image, mask = self.images[index], self.masks[index]
            if torch.rand(1).item() < 0.5:
                image = image.flip(-1)
            return image, mask
    """
)


def test_a_flip_of_the_input_alone_is_found_when_the_targets_are_dense(tmp_path):
    import importlib.util

    path = tmp_path / "pairs_data.py"
    path.write_text(PAIRS_MODULE)
    spec = importlib.util.spec_from_file_location("pairs_data", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    images, masks = torch.randn(20, 1, 8, 8), (torch.rand(20, 1, 8, 8) > 0.5).float()
    assert pairing.one_sided_augmentation("train_loader", module.Pairs(images, masks)) is None
    found = pairing.one_sided_augmentation("train_loader", module.ImageOnly(images, masks))
    assert found is not None
    file, line, message, details = found
    assert (file, line) == (str(path), 25) and details["untransformed"] == ["mask"] and "`mask`" in message
    # class ids as targets are not dense: flipping the image alone is the usual augmentation
    assert pairing.one_sided_augmentation("train_loader", module.ImageOnly(images, torch.arange(20))) is None


def test_inputs_and_labels_reordered_by_two_draws_are_found_and_one_draw_is_not(tmp_path):
    path = tmp_path / "shuffle.py"
    path.write_text(
        textwrap.dedent(
            """\
            def load(x_train, y_train, x_val, y_val, rng):
                x_train = x_train[rng.permutation(len(x_train))]
                y_train = y_train[rng.permutation(len(y_train))]
                perm = rng.permutation(len(x_val))
                x_val = x_val[perm]
                y_val = y_val[perm]
                keys = x_val[:, 0].argsort()
                x_val = x_val[keys]
                y_val = y_val[x_val[:, 0].argsort()]
                return x_train, y_train
            """
        )
    )
    found = pairing.separate_permutations(str(path), "x_train", "y_train")
    assert found is not None and found[0] == 3 and found[2]["check"] == "separate-permutations"
    assert pairing.separate_permutations(str(path), "x_val", "y_val") is None  # one draw, or no random draw


def test_a_split_sliced_from_arrays_shuffled_apart_is_found_and_one_shared_shuffle_is_not(tmp_path):
    """``images`` and ``labels`` each reordered by a draw of their own, then the training split sliced from both and
    standardized: the split's arrays are followed back through the row-keeping transforms, the slices and a tuple
    assignment to the two reorderings."""
    path = tmp_path / "prepare.py"
    path.write_text(
        textwrap.dedent(
            """\
            def split(images, labels, n_val, torch):
                images = images[torch.randperm(len(images))]
                labels = labels[torch.randperm(len(labels))]
                train_x, train_y = images[n_val:], labels[n_val:]
                train_x = (train_x - train_x.mean()) / train_x.std()
                train_y = train_y.long()
                return train_x, train_y


            def split_first(images, labels, rng):
                x_train, y_train = images[:2000], labels[:2000]
                x_train = x_train[rng.permutation(len(x_train))]
                y_train = y_train[rng.permutation(len(y_train))]
                x_train = (x_train - x_train.mean()) / x_train.std()
                return x_train, y_train


            def shared(images, labels, n_val, torch):
                order = torch.randperm(len(images))
                images, labels = images[order], labels[order]
                images = images[order]
                labels = labels[order]
                x = images[n_val:]
                y = labels[n_val:]
                return x, y
            """
        )
    )
    found = pairing.separate_permutations(str(path), "train_x", "train_y")
    assert (
        found is not None
        and found[0] == 3
        and found[2]
        == {
            "check": "separate-permutations",
            "features": "images",
            "labels": "labels",
        }
    )
    assert "`labels` and `images`" in found[1]
    assert pairing.separate_permutations(str(path), "x", "y") is None  # one draw indexes both
    # sliced first, then reordered apart, then standardized: the reorderings of the split's own arrays
    found = pairing.separate_permutations(str(path), "x_train", "y_train")
    assert found is not None and found[0] == 13 and found[2]["features"] == "x_train"
