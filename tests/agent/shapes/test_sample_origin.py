"""agent.shapes.sample_origin: the ``__getitem__`` line that reshaped a loss's target, found from the loss call's frame
through the ``for x, y in loader`` that unpacked it, the loader's dataset and what ``__getitem__`` returns; nothing
when the target was not reshaped there, not unpacked from a loader, or the dataset is torch's."""

from __future__ import annotations

import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset, Subset, TensorDataset

from tensorsight.agent.shapes import sample_origin

HERE = os.path.abspath(__file__)


class Flattened(Dataset):
    def __init__(self, values: torch.Tensor) -> None:
        self.values = values

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, i: int):
        features = self.values[i : i + 1]
        label = self.values[i : i + 1].view(-1)
        return features, label


class Kept(Flattened):
    def __getitem__(self, i: int):
        return self.values[i : i + 1], self.values[i : i + 1]


def criterion(prediction, target):
    """A loss as the broadcast check sees it: asked from inside, about the caller's line."""
    return sample_origin.reshaped_in_dataset(sys._getframe(1), 1, "target")


def origin_at_loss(loader) -> tuple[str, int] | None:
    for features, label in loader:
        return criterion(features, label)
    return None


def test_a_label_reshaped_by_getitem_is_found_at_that_line_through_a_subset_too():
    values = torch.arange(12.0)
    expected = (HERE, Flattened.__getitem__.__code__.co_firstlineno + 2)
    assert origin_at_loss(DataLoader(Flattened(values), batch_size=4)) == expected
    assert origin_at_loss(DataLoader(Subset(Flattened(values), range(8)), batch_size=4)) == expected


def test_a_label_getitem_returns_as_stored_or_a_library_dataset_gives_nothing():
    values = torch.arange(12.0)
    assert origin_at_loss(DataLoader(Kept(values), batch_size=4)) is None
    assert origin_at_loss(DataLoader(TensorDataset(values, values), batch_size=4)) is None
    assert origin_at_loss([(values, values)]) is None  # not a DataLoader: no dataset


def test_reshaping_calls_are_told_from_the_rest():
    assert sample_origin._reshapes("        y = row[1:2].squeeze()\n")
    assert sample_origin._reshapes("return x, y.view(-1, 1)")
    assert not sample_origin._reshapes("        y = row[1:2] * 2\n")
    assert not sample_origin._reshapes("        y = torch.stack([a,\n")  # a statement cut by the line: unknown
