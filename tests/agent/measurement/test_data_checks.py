"""agent.measurement.data_checks in this process, on real torch, with the phase clock and evaluation watch it hangs off.

Each check on a bug shape and its clean twin: a language model whose targets are its inputs (found at the loss call)
against one with the shift; the classes a classification loss scores (only when that loss is what is
backpropagated); evaluation inputs left unnormalised (found at the evaluation forward) against normalised ones;
training targets that copy the inputs while evaluation scores other targets (found where the training pairs are
made) against a denoising model and a plain autoencoder. The watched run's parameters and RNG state are those of an
unwatched run.
"""

from __future__ import annotations

import inspect
import os

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

from support.loss_watch import Watched as LossWatched
from support.loss_watch import line_of
from tensorsight.agent.measurement.data_checks import DataWatch

HERE = os.path.abspath(__file__)


def Watched() -> LossWatched:
    """The data watch installed here, with its phase clock and evaluation watch."""
    return LossWatched(DataWatch)


class TinyLM(nn.Module):
    def __init__(self, vocab: int = 12) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 16)
        self.head = nn.Linear(16, vocab)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.embed(idx)))


def train_lm(shift: bool, steps: int = 6) -> TinyLM:
    torch.manual_seed(0)
    model = TinyLM()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    stream = torch.arange(steps * 4 * 9).remainder(12).view(steps * 4, 9)
    for step in range(steps):
        batch = stream[step * 4 : (step + 1) * 4]
        inputs = batch[:, :-1]
        targets = batch[:, 1:] if shift else inputs
        logits = model(inputs)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.reshape(-1))  # @loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model


def test_a_language_model_scored_on_its_own_inputs_is_found_at_the_loss_call():
    plain = train_lm(shift=False)
    rng = torch.get_rng_state()
    with Watched() as watched:
        model = train_lm(shift=False)
    after_watched = torch.get_rng_state()
    (finding,) = watched.findings
    assert (finding["kind"], finding["severity"]) == ("training-logic", "warning")
    assert (finding["file"], finding["line"]) == (HERE, line_of(train_lm, "loss"))
    assert "token for token" in finding["message"] and "tokens[:, 1:]" in finding["message"]
    assert finding["details"]["steps_checked"] == 3
    # a good guest: the same training as without the watch, the global RNG untouched by the checks
    assert all(torch.equal(a, b) for a, b in zip(plain.parameters(), model.parameters(), strict=True))
    assert torch.equal(after_watched, rng)


class TokenWindows(Dataset):
    """Windows of a token stream, (input, target) per item, as character-level GPT examples write them."""

    def __init__(self, stream: torch.Tensor, block: int, shift: bool) -> None:
        self.stream, self.block, self.shift = stream, block, shift

    def __len__(self) -> int:
        return len(self.stream) - self.block - 1

    def __getitem__(self, index: int):
        chunk = self.stream[index : index + self.block + 1]
        x = chunk[:-1]
        y = chunk[1:] if self.shift else chunk[:-1]  # @window-targets
        return x, y


class LossInForward(TinyLM):
    """A model that computes its own loss when given targets (minGPT's ``forward(idx, targets)``)."""

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):  # type: ignore[override]
        logits = super().forward(idx)
        loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


def train_gpt_style(shift: bool, steps: int = 5) -> None:
    torch.manual_seed(0)
    stream = torch.arange(400).remainder(12)
    loader = DataLoader(TokenWindows(stream, 8, shift), batch_size=4, shuffle=True)
    model = LossInForward()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = iter(loader)
    for _ in range(steps):
        x, y = next(batches)
        _, loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def test_targets_copied_by_the_datasets_getitem_into_a_loss_in_forward_are_found_where_getitem_writes_them():
    with Watched() as watched:
        train_gpt_style(shift=False)
    (finding,) = watched.findings
    assert finding["details"]["check"] == "targets-equal-inputs"
    assert (finding["file"], finding["line"]) == (HERE, line_of(TokenWindows.__getitem__, "window-targets"))
    assert finding["details"]["loss_line"] == inspect.getsourcelines(LossInForward.forward)[1] + 2
    with Watched() as watched:
        train_gpt_style(shift=True)
    assert watched.findings == []


def test_a_language_model_with_its_shift_gets_nothing_and_scores_its_vocabulary():
    with Watched() as watched:
        train_lm(shift=True)
    assert watched.findings == []
    assert watched.watch.curve_extra() == {"classes": 12, "classification_at": (HERE, line_of(train_lm, "loss"))}


def test_classes_are_only_claimed_when_the_classification_loss_is_what_is_backpropagated():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = nn.CrossEntropyLoss()
    x, y = torch.randn(32, 4), torch.randint(0, 3, (32,))
    with Watched() as watched:
        for _ in range(5):
            optimizer.zero_grad()
            loss = criterion(model(x), y) + 0.1 * model.weight.abs().sum()  # a regularised loss: not ln(3) at chance
            loss.backward()
            optimizer.step()
    assert watched.watch.curve_extra() == {}
    with Watched() as watched:
        for _ in range(5):
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
    assert watched.watch.curve_extra()["classes"] == 3


def fit_and_evaluate(normalize_eval: bool) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    images = torch.rand(64, 3, 4, 4) * 0.5 + 0.25  # pixels in [0.25, 0.75]
    labels = (images.mean(dim=(1, 2, 3)) > 0.5).long()
    mean, std = images.mean(), images.std()
    for start in range(0, 64, 16):
        optimizer.zero_grad()
        F.cross_entropy(model((images[start : start + 16] - mean) / std), labels[start : start + 16]).backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        for start in range(0, 64, 16):
            batch = images[start : start + 16]
            model((batch - mean) / std if normalize_eval else batch)  # @eval


def test_evaluation_inputs_left_unnormalised_are_found_at_the_evaluation_forward_with_their_statistics():
    with Watched() as watched:
        fit_and_evaluate(normalize_eval=False)
    (finding,) = [f.to_dict() for f in watched.watch.normalization_findings()]
    assert (finding["kind"], finding["line"], finding["file"]) == (
        "training-logic",
        line_of(fit_and_evaluate, "eval"),
        HERE,
    )
    details = finding["details"]
    assert abs(details["train_mean"]) < 0.1 and abs(details["train_std"] - 1.0) < 0.1
    assert abs(details["eval_mean"] - 0.5) < 0.05 and details["std_ratio"] < 0.2
    assert watched.watch.curve_extra()["evaluation_inputs_differ"] is True


def test_evaluation_inputs_normalised_like_training_inputs_get_nothing():
    with Watched() as watched:
        fit_and_evaluate(normalize_eval=True)
    assert watched.watch.normalization_findings() == ()
    assert "evaluation_inputs_differ" not in watched.watch.curve_extra()


class Reconstruction(Dataset):
    """(input, target) rows the way a denoising or a plain autoencoder's dataset serves them."""

    def __init__(self, inputs: torch.Tensor, targets: torch.Tensor) -> None:
        self.inputs, self.targets = inputs, targets

    def __len__(self) -> int:
        return len(self.inputs)

    def __getitem__(self, index: int):
        return self.inputs[index], self.targets[index]


def fit_autoencoder(kind: str) -> None:
    """``kind``: "denoising" (noisy in, clean out), "copy" (the bug: noisy in, noisy out, evaluated against clean)
    or "plain" (an autoencoder: its input in, its input out, in both splits)."""
    torch.manual_seed(0)
    clean = torch.sin(torch.linspace(0, 6.28, 16)).repeat(96, 1) * torch.rand(96, 1)
    noisy = clean + 0.3 * torch.randn_like(clean)
    model = nn.Sequential(nn.Linear(16, 4), nn.ReLU(), nn.Linear(4, 16))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    targets = {"denoising": clean, "copy": noisy, "plain": noisy}[kind]
    pairs = Reconstruction(noisy[:64], targets[:64])  # @pairs
    loader = DataLoader(pairs, batch_size=16, shuffle=True)
    criterion = nn.MSELoss()
    for _ in range(2):
        for inputs, wanted in loader:
            optimizer.zero_grad()
            criterion(model(inputs), wanted).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            reference = noisy[64:] if kind == "plain" else clean[64:]
            F.mse_loss(model(noisy[64:]), reference)  # @evaluate
        model.train()


def test_training_targets_that_copy_the_inputs_while_evaluation_scores_others_are_found_where_the_pairs_are_made():
    with Watched() as watched:
        fit_autoencoder("copy")
    (finding,) = [f.to_dict() for f in watched.watch.copy_target_findings()]
    assert (finding["kind"], finding["file"], finding["line"]) == (
        "training-logic",
        HERE,
        line_of(fit_autoencoder, "pairs"),
    )
    assert finding["details"]["check"] == "targets-copy-inputs" and finding["details"]["steps_checked"] == 8
    assert finding["details"]["evaluation"] == {"file": HERE, "line": line_of(fit_autoencoder, "evaluate")}
    assert f"the loss at line {line_of(fit_autoencoder, 'evaluate')}" in finding["message"]


def test_a_denoising_model_and_a_plain_autoencoder_get_nothing():
    for kind in ("denoising", "plain"):
        with Watched() as watched:
            fit_autoencoder(kind)
        assert watched.watch.copy_target_findings() == (), kind


class Windows(Dataset):
    """Sliding windows of a multivariate series, the way forecasting examples serve them: ``lookback`` steps of every
    feature in, the next value of feature 0 out. ``leak`` widens the input by the step it predicts (the bug)."""

    def __init__(self, series: torch.Tensor, lookback: int, leak: int) -> None:
        self.series, self.lookback, self.leak = series, lookback, leak

    def __len__(self) -> int:
        return len(self.series) - self.lookback - 1

    def __getitem__(self, i: int):
        end = i + self.lookback
        window = self.series[i : end + self.leak]  # @window
        target = self.series[end, 0:1]
        return window, target


def fit_forecaster(leak: int) -> nn.Module:
    torch.manual_seed(0)
    steps = torch.arange(400, dtype=torch.float32)
    series = torch.stack([torch.sin(steps / 7), torch.cos(steps / 11), torch.rand(400)], dim=1)
    lookback = 12
    model = nn.Sequential(nn.Flatten(), nn.Linear((lookback + leak) * 3, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    loader = DataLoader(Windows(series, lookback, leak), batch_size=32, shuffle=True)
    for inputs, wanted in loader:
        optimizer.zero_grad()
        F.mse_loss(model(inputs), wanted).backward()
        optimizer.step()
    return model


def fit_table(label_in_features: bool) -> None:
    torch.manual_seed(0)
    features, labels = torch.randn(256, 6), torch.randn(256, 1)
    columns = torch.cat([features, labels], dim=1) if label_in_features else features
    rows = torch.utils.data.TensorDataset(columns, labels)  # @rows
    model = nn.Linear(columns.shape[1], 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for inputs, wanted in DataLoader(rows, batch_size=32):
        optimizer.zero_grad()
        F.l1_loss(model(inputs), wanted).backward()
        optimizer.step()


def test_a_target_inside_its_input_window_is_found_where_the_dataset_writes_the_window():
    with Watched() as watched:
        fit_forecaster(leak=1)
    (finding,) = [f.to_dict() for f in watched.watch.target_in_inputs_findings()]
    assert (finding["kind"], finding["severity"], finding["file"]) == ("leakage", "error", HERE)
    assert finding["line"] == line_of(Windows.__getitem__, "window")
    assert finding["details"]["check"] == "target-in-inputs" and finding["details"]["input_index"] == [12, 0]
    assert "input [12, 0]" in finding["message"] and "8 of 8 training batches" in finding["message"]


def test_a_label_column_left_among_the_features_is_found_at_the_dataset_the_loader_serves():
    with Watched() as watched:
        fit_table(label_in_features=True)
    (finding,) = [f.to_dict() for f in watched.watch.target_in_inputs_findings()]
    assert (finding["file"], finding["line"]) == (HERE, line_of(fit_table, "rows"))
    assert finding["details"]["input_index"] == [6]


def test_windows_that_stop_before_their_target_and_features_without_the_label_get_nothing():
    with Watched() as watched:
        fit_forecaster(leak=0)
        fit_table(label_in_features=False)
    assert watched.watch.target_in_inputs_findings() == ()


def test_looking_for_the_target_leaves_the_run_as_it_was():
    torch.manual_seed(0)
    plain = fit_forecaster(leak=1)
    after_plain = torch.get_rng_state()
    with Watched():
        watched = fit_forecaster(leak=1)
    assert torch.equal(torch.get_rng_state(), after_plain)
    pairs = zip(plain.state_dict().values(), watched.state_dict().values(), strict=True)
    assert all(torch.equal(a, b) for a, b in pairs)
