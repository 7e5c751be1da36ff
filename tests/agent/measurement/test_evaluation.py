"""agent.measurement.evaluation in this process, on real torch: the functional-loss relays and the train-mode
evaluation check, with the phase clock they hang off.

The relays: same name, signature, result, error and warning location as the functions they relay; one call counted
however it is nested (a loss module, a TorchFunctionMode passing it on); ``from torch.nn.functional import ...``
after install gets them; uninstall puts the originals back. The check: each bug shape is found at the line of the
forward call, and each clean pattern (siamese passes, accumulation, GAN detach, teacher, swa_utils.update_bn, Monte
Carlo dropout, a model without dropout) gets nothing; the gradients are those of an unwatched run.
"""

from __future__ import annotations

import copy
import inspect
import os
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from tensorsight.agent.measurement.evaluation import (
    FUNCTIONAL_LOSSES,
    EvaluationWatch,
    layer_kind,
    training_mode_layers,
)
from tensorsight.agent.measurement.phases import PhaseClock
from tensorsight.agent.runtime import events
from tensorsight.agent.runtime.op_calls import is_op_call

HERE = os.path.abspath(__file__)


class Watched:
    """A phase clock and an evaluation watch installed here, and the findings and validation passes they publish."""

    def __init__(self) -> None:
        self.clock = PhaseClock(torch)
        self.watch = EvaluationWatch(torch, self.clock)
        self.findings: list[dict] = []
        self.validations: list[tuple[float, int]] = []

    def __enter__(self) -> Watched:
        self.clock.install()
        self.watch.install()
        self.clock.validation_listeners.append(lambda _step, loss, batches: self.validations.append((loss, batches)))
        self._unsubscribe = events.subscribe(self._collect)
        return self

    def _collect(self, event: dict) -> None:
        if event.get("type") == "finding":
            self.findings.append(event["finding"])

    def __exit__(self, *exc: object) -> None:
        self._unsubscribe()
        self.watch.uninstall()
        self.clock.uninstall()

    def finish(self, failed: bool = False) -> list[dict]:
        self.clock.finish()
        self.watch.finish(failed=failed)
        return [f for f in self.findings if f["details"].get("check") == "train-mode-evaluation"]


def line_of(function, marker: str) -> int:
    """The line of ``function`` that ends with the comment ``# @marker``."""
    lines, start = inspect.getsourcelines(function)
    (offset,) = [i for i, line in enumerate(lines) if line.rstrip().endswith(f"# @{marker}")]
    return start + offset


def dropout_net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 2))


def data(count: int = 64, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(count, 6, generator=generator)
    return x, (x[:, 0] > 0).long()


def train_steps(model: nn.Module, optimizer: torch.optim.Optimizer, steps: int = 3) -> None:
    x, y = data()
    model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


# ------------------------------------------------------------------------------------------------------ relays
def test_relays_keep_what_the_functions_are_and_come_off():
    originals = {name: getattr(F, name) for name in FUNCTIONAL_LOSSES}
    with Watched():
        for name, original in originals.items():
            relay = getattr(F, name)
            assert relay is not original and relay.__wrapped__ is original and relay.__name__ == name
            assert inspect.signature(relay) == inspect.signature(original)
            assert is_op_call(relay.__code__)  # our walks for the user's frame look through it
        from torch.nn.functional import cross_entropy  # as a program does after `import torch`

        assert cross_entropy is F.cross_entropy
        _, y = data()
        logits = torch.randn(64, 2)
        assert torch.equal(F.cross_entropy(logits, y), originals["cross_entropy"](logits, y))
        with pytest.raises(ValueError) as relayed:
            F.cross_entropy(logits, y[:10])
        with pytest.raises(ValueError) as plain:
            originals["cross_entropy"](logits, y[:10])
        assert str(relayed.value) == str(plain.value)
    assert {name: getattr(F, name) for name in FUNCTIONAL_LOSSES} == originals


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_torchscript_still_compiles_the_relayed_losses():
    class Scored(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(6, 2)

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return F.cross_entropy(self.fc(x), y)

    x, y = data()
    with Watched():
        model = Scored()
        assert torch.equal(torch.jit.script(model)(x, y), model(x, y))
        logits = torch.randn(64, 2)
        assert torch.equal(torch.jit.script(nn.CrossEntropyLoss())(logits, y), F.cross_entropy(logits, y))


def test_torch_warnings_still_point_at_the_callers_line():
    prediction, target = torch.zeros(8, 1), torch.zeros(8)
    with Watched(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # a target size different to the input size, then kl_div's reduction 'mean': torch warns for its caller
        F.mse_loss(prediction, target)  # @mse
        F.kl_div(torch.zeros(4, 3), torch.zeros(4, 3))
    expected = line_of(test_torch_warnings_still_point_at_the_callers_line, "mse")
    assert [(w.filename, w.lineno) for w in caught] == [(HERE, expected), (HERE, expected + 1)]
    assert "different to the input size" in str(caught[0].message)


def test_a_functional_validation_loss_is_captured_once_and_a_loss_module_not_twice():
    """Summed losses (the MNIST example's ``test()``: ``reduction="sum"``) count per sample, as a mean would, so the
    validation curve is on the training loss's scale."""
    model = dropout_net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with Watched() as watched:
        train_steps(model, optimizer)
        x, y = data(seed=2)
        model.eval()
        with torch.no_grad():
            functional = F.cross_entropy(model(x), y, reduction="sum").item()  # @first
            module = nn.CrossEntropyLoss(reduction="sum")(model(x), y).item()  # calls F.cross_entropy inside
            regression = F.mse_loss(model(x), torch.zeros(len(y), 2), reduction="sum").item()
        third = F.cross_entropy(model(x), y).item()  # eval mode with gradients: still a validation pass
        assert watched.validations == []
        train_steps(model, optimizer, steps=1)  # the next training pass ends the validation pass
    (validation,) = watched.validations
    per_term = (functional / len(y), module / len(y), regression / (2 * len(y)), third)
    assert validation[1] == 4 and validation[0] == pytest.approx(sum(per_term) / 4, rel=1e-5)
    test = test_a_functional_validation_loss_is_captured_once_and_a_loss_module_not_twice
    assert watched.clock.validation_at == (HERE, line_of(test, "first"))


def test_losses_of_a_model_left_in_eval_mode_that_are_backpropagated_are_not_validation_losses():
    """An evaluation callback left the model in eval mode: its next training losses look like validation losses
    until their backward() says otherwise; only the real evaluation (no gradients) is a validation pass."""
    model = dropout_net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = data()
    with Watched() as watched:
        train_steps(model, optimizer, steps=1)
        model.eval()
        for step in range(4):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            (loss / 2 if step % 2 else loss).backward()  # scaled, as gradient accumulation does
            optimizer.step()
        with torch.no_grad():
            evaluated = F.cross_entropy(model(x), y).item()
        train_steps(model, optimizer, steps=1)
    assert [loss for loss, _ in watched.validations] == [pytest.approx(evaluated, rel=1e-6)]


def test_a_torch_function_mode_passing_a_loss_on_is_one_call():
    class PassOn(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    model = dropout_net().eval()
    x, y = data()
    with Watched() as watched:
        model(x)
        with torch.no_grad(), PassOn():
            F.nll_loss(F.log_softmax(model(x), dim=1), y)
        assert len(watched.clock._val_losses) == 1


def test_a_tensor_subclass_sees_the_same_dispatch():
    seen = []

    class Counted(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is F.mse_loss:
                seen.append(func)
            return super().__torch_function__(func, types, args, kwargs or {})

    prediction, target = torch.zeros(4).as_subclass(Counted), torch.ones(4)
    F.mse_loss(prediction, target)
    plain = len(seen)
    with Watched():
        F.mse_loss(prediction, target)
        assert seen[-1] is F.mse_loss
    assert plain == 1 and len(seen) == 2  # once per call, with the function the program calls


def test_training_losses_are_not_validation_losses():
    model = dropout_net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with Watched() as watched:
        train_steps(model, optimizer, steps=4)
        assert watched.clock._val_losses == [] and watched.validations == []


# ------------------------------------------------------------------------------------------ train-mode evaluation
def evaluate(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    return F.cross_entropy(net(x), y).item()  # @forward


def test_an_evaluation_helper_in_training_mode_is_found_at_its_forward_line():
    model = dropout_net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    val_x, val_y = data(seed=3)
    with Watched() as watched:
        for _ in range(2):
            train_steps(model, optimizer)
            evaluate(model, val_x, val_y)
        found = watched.finish()
    (finding,) = found
    assert (finding["file"], finding["line"]) == (HERE, line_of(evaluate, "forward"))
    assert finding["kind"] == "training-logic" and finding["severity"] == "warning"
    details = finding["details"]
    assert details["evidence"] == "never-backpropagated" and details["module"] == "Sequential"
    assert details["layers"] == ["2 (Dropout)"] and details["behaviours"] == ["dropout"]
    assert details["held_out"] == {"data": "tensors scored by a loss"}
    assert "model.eval() before evaluating and model.train() after" in finding["message"]


def test_a_no_grad_test_loop_in_training_mode_on_the_validation_loader_is_found():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    x, y = data(96)
    with Watched() as watched:  # the clock remembers the loaders built from now on
        train_loader = DataLoader(TensorDataset(x[:64], y[:64]), batch_size=16)
        val_loader = DataLoader(TensorDataset(x[64:], y[64:]), batch_size=16)  # @loader
        for _ in range(2):
            model.train()
            for xb, yb in train_loader:
                optimizer.zero_grad()
                F.cross_entropy(model(xb), yb).backward()
                optimizer.step()
            model.train()
            with torch.no_grad():
                for xb, _ in val_loader:
                    model(xb)  # @forward
        found = watched.finish()
    test = test_a_no_grad_test_loop_in_training_mode_on_the_validation_loader_is_found
    (finding,) = found
    assert finding["line"] == line_of(test, "forward")
    details = finding["details"]
    assert details["evidence"] == "no_grad" and details["behaviours"] == ["batch norm"]
    assert details["held_out"]["line"] == line_of(test, "loader")
    assert details["held_out"]["held_out"] == "named 'val'"
    assert "batch norm normalises with each batch's own statistics" in finding["message"]


def test_evaluation_before_any_training_is_reported_once_the_model_trains():
    model = dropout_net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    val_x, val_y = data(seed=3)
    with Watched() as watched:
        evaluate(model, val_x, val_y)
        train_steps(model, optimizer, steps=2)
        assert [f["line"] for f in watched.findings] == [line_of(evaluate, "forward")]


def test_an_evaluation_still_open_at_the_end_counts_unless_the_run_failed():
    for failed, expected in ((False, 1), (True, 0)):
        model = dropout_net()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        val_x, val_y = data(seed=3)
        with Watched() as watched:
            train_steps(model, optimizer)
            kept = F.cross_entropy(model(val_x), val_y)  # its graph is alive when the run ends
            assert len(watched.finish(failed=failed)) == expected
        del kept


def siamese_step(model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor) -> None:
    optimizer.zero_grad()
    first, second = model(x), model(x.flip(0))
    (first - second).pow(2).mean().backward()
    optimizer.step()


def test_clean_patterns_get_nothing():
    model = dropout_net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    teacher = copy.deepcopy(model)
    for p in teacher.parameters():
        p.requires_grad_(False)
    torch.manual_seed(0)
    plain = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 2))  # no dropout, no batch norm
    plain_optimizer = torch.optim.SGD(plain.parameters(), lr=0.1)
    generator = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 6))
    bn = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
    gan_optimizer = torch.optim.SGD([*generator.parameters(), *bn.parameters()], lr=0.01)
    x, y = data()
    loader = DataLoader(TensorDataset(x, y), batch_size=16)
    with Watched() as watched:
        for step in range(4):
            siamese_step(model, optimizer, x)  # two passes, one backward through both
            loss = F.cross_entropy(model(x), y) / 2  # gradient accumulation: a step every two backwards
            loss.backward()
            if step % 2:
                optimizer.step()
                optimizer.zero_grad()
            with torch.no_grad():
                teacher(x)  # a teacher in training mode on purpose: never trained by backward
            fake = generator(x)  # its output is scored detached, then backpropagated
            F.cross_entropy(bn(fake.detach()), y).backward()
            F.cross_entropy(bn(fake), y).backward()
            gan_optimizer.step()
            plain_optimizer.zero_grad()
            F.cross_entropy(plain(x), y).backward()
            plain_optimizer.step()
            F.cross_entropy(plain(x), y).item()  # training mode changes nothing for this model
        torch.optim.swa_utils.update_bn(loader, bn)  # the library runs it in training mode on purpose
        model.eval()
        for module in model.modules():
            if isinstance(module, nn.Dropout):
                module.train()  # Monte Carlo dropout: chosen, and the model itself is in eval mode
        with torch.no_grad():
            model(x)
        with torch.inference_mode():
            F.cross_entropy(model.eval()(x), y)
        assert watched.finish() == []


def test_the_watch_changes_no_gradient():
    def gradients(watched: bool) -> list[torch.Tensor]:
        model = dropout_net()
        x, y = data()
        torch.manual_seed(5)
        if watched:
            with Watched():
                F.cross_entropy(model(x), y).backward()
        else:
            F.cross_entropy(model(x), y).backward()
        return [p.grad.clone() for p in model.parameters()]

    for with_watch, without in zip(gradients(True), gradients(False), strict=True):
        assert torch.equal(with_watch, without)


def test_layers_that_behave_differently_in_training_mode():
    class UsesTraining(nn.Module):
        def forward(self, x):
            return F.dropout(x, 0.1, self.training)

    assert layer_kind(torch, nn.Dropout(0.0)) is None and layer_kind(torch, nn.Dropout2d(0.2)) == "dropout"
    assert layer_kind(torch, nn.LSTM(4, 4, num_layers=2, dropout=0.3)) == "dropout"
    assert layer_kind(torch, nn.LSTM(4, 4, dropout=0.0)) is None
    assert layer_kind(torch, nn.InstanceNorm1d(4)) is None
    assert layer_kind(torch, nn.InstanceNorm1d(4, track_running_stats=True)) == "instance norm"
    assert layer_kind(torch, UsesTraining()) == "training-dependent forward"
    assert layer_kind(torch, nn.TransformerEncoderLayer(8, 2)) is None  # its Dropout children are listed instead
    names = [name for name, _, _ in training_mode_layers(torch, nn.TransformerEncoderLayer(8, 2, dropout=0.1))]
    assert names == ["self_attn", "dropout", "dropout1", "dropout2"]
