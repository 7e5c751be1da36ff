"""agent.measurement.heldout_rows in this process, on real torch, with the phase clock and evaluation watch it hangs
off, on full-batch programs written the way node-classification and tabular examples are: a training loss over every
row while evaluation picks its rows with a boolean mask (found at the training loss, the mask named as ``main()``
calls it) or with an integer index, against the same programs selecting the training rows, and a mini-batch program
whose evaluation masks out padding. The watched run's parameters are those of an unwatched run."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from support.loss_watch import Watched as LossWatched
from support.loss_watch import line_of
from tensorsight.agent.measurement.heldout_rows import HeldOutRowsWatch


def Watched() -> LossWatched:
    return LossWatched(HeldOutRowsWatch)


class TwoLayer(nn.Module):
    def __init__(self, features: int, classes: int) -> None:
        super().__init__()
        self.hidden = nn.Linear(features, 16)
        self.out = nn.Linear(16, classes)
        self.drop = nn.Dropout(0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.drop(torch.relu(self.hidden(x))))


def make_graph_like(nodes: int = 300, classes: int = 4):
    generator = torch.Generator().manual_seed(0)
    labels = torch.randint(0, classes, (nodes,), generator=generator)
    features = torch.randn(nodes, 8, generator=generator) + labels.unsqueeze(1).float()
    order = torch.randperm(nodes, generator=generator)
    train_mask = torch.zeros(nodes, dtype=torch.bool)
    val_mask = torch.zeros(nodes, dtype=torch.bool)
    train_mask[order[:60]] = True
    val_mask[order[60:160]] = True
    return features, labels, train_mask, val_mask


def train_step(model, optimizer, features, labels, train_mask, whole: bool) -> float:
    model.train()
    optimizer.zero_grad()
    out = model(features)
    if whole:
        loss = F.cross_entropy(out, labels)  # @whole
    else:
        loss = F.cross_entropy(out[train_mask], labels[train_mask])
    loss.backward()
    optimizer.step()
    return loss.item()


def evaluate(model, features, labels, mask) -> float:
    model.eval()
    with torch.no_grad():
        out = model(features)
        return F.cross_entropy(out[mask], labels[mask]).item()  # @evaluate


def node_classification(whole: bool, epochs: int = 5) -> tuple[list[float], nn.Module]:
    torch.manual_seed(0)
    features, labels, train_mask, val_mask = make_graph_like()
    model = TwoLayer(8, 4)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    history = []
    for _ in range(epochs):
        history.append(train_step(model, optimizer, features, labels, train_mask, whole))
        history.append(evaluate(model, features, labels, val_mask))
    return history, model


def test_a_loss_over_every_node_while_evaluation_masks_its_nodes_is_leakage_at_the_training_loss():
    with Watched() as watched:
        history, model = node_classification(whole=True)
    (finding,) = watched.findings
    assert finding["kind"] == "leakage" and finding["severity"] == "error"
    assert finding["line"] == line_of(train_step, "whole")
    assert finding["details"]["selector"] == "val_mask"  # the name main() gives it, not evaluate()'s ``mask``
    assert finding["details"]["rows"] == 300 and finding["details"]["held_out_rows"] == 100
    assert finding["details"]["evaluation"]["line"] == line_of(evaluate, "evaluate")
    plain_history, plain_model = node_classification(whole=True)
    assert history == plain_history
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), plain_model.parameters(), strict=True))


def test_the_training_loss_over_the_training_mask_is_silent():
    with Watched() as watched:
        node_classification(whole=False)
    assert watched.findings == []


def fit_regression(index_split: bool) -> None:
    """A tabular regression fitted on one tensor, evaluated on rows picked by an integer index."""
    torch.manual_seed(0)
    x = torch.randn(200, 5)
    y = x @ torch.arange(1.0, 6.0) + 0.1 * torch.randn(200)
    permutation = torch.randperm(200)
    train_idx, test_idx = permutation[:150], permutation[150:]
    model = nn.Linear(5, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(4):
        model.train()
        if index_split:
            loss = F.mse_loss(model(x[train_idx]).squeeze(1), y[train_idx])
        else:
            loss = F.mse_loss(model(x).squeeze(1), y)  # @regression
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            F.mse_loss(model(x[test_idx]).squeeze(1), y[test_idx])


def test_an_index_split_is_found_too_and_its_clean_twin_is_silent():
    with Watched() as watched:
        fit_regression(index_split=False)
    (finding,) = watched.findings
    assert finding["line"] == line_of(fit_regression, "regression") and finding["details"]["selector"] == "test_idx"
    with Watched() as watched:
        fit_regression(index_split=True)
    assert watched.findings == []


def test_mini_batches_with_a_padding_mask_in_evaluation_are_silent():
    """Training on whole batches of token ids, evaluation scoring the non-padding positions of other batches."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(10, 8), nn.Linear(8, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_step() -> None:
        model.train()
        tokens = torch.randint(1, 10, (16,))
        loss = F.cross_entropy(model(tokens), tokens.roll(1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    for _ in range(4):
        train_step()
    with Watched() as watched:
        for _ in range(6):
            train_step()
            model.eval()
            with torch.no_grad():
                held = torch.randint(0, 10, (16,))
                mask = held != 0
                F.cross_entropy(model(held)[mask], held.roll(1)[mask])
    assert watched.findings == []
