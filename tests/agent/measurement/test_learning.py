"""agent.measurement.learning in-process, on real small torch models: parameters that never get a gradient or sit in
no optimizer, backward through a model left in eval(), hand-written updates on gradients nobody clears, and the
explainer of a graph walked twice; each clean counterpart stays silent."""

from __future__ import annotations

import runpy
from types import SimpleNamespace

import pytest

from tensorsight.agent.measurement.learning import LearningWatch, explain_graph_reuse, reused_tensor
from tensorsight.agent.runtime import steps

torch = pytest.importorskip("torch")
nn = torch.nn


class FakeClock:
    """The phase clock's surface the watch reads: listeners, models seen, optimizer lines, backward count."""

    def __init__(self, *models: nn.Module) -> None:
        self.before_step_listeners: list = []
        self.step_listeners: list = []
        self.model_input_listeners: list = []
        self.backward_listeners: list = []
        self._models = list(models)
        self.lines: dict[int, tuple[str, int]] = {}
        self.backwards = 0
        self.loss_at: tuple[str, int] | None = None

    def models(self) -> list[nn.Module]:
        return self._models

    def optimizer_at(self, optimizer=None):
        if optimizer is None:
            return next(iter(self.lines.values()), None)
        return self.lines.get(id(optimizer))


def make_watch(clock: FakeClock, names: dict | None = None) -> tuple[LearningWatch, list, set]:
    found: list = []
    uncleared: set = set()
    names = names or {}
    return LearningWatch(torch, clock, found.append, uncleared, lambda o: names.get(id(o))), found, uncleared


class Net(nn.Module):
    def __init__(self, neck_under_no_grad: bool = False) -> None:
        super().__init__()
        self.backbone = nn.Linear(4, 8)
        self.neck = nn.Linear(8, 8)
        self.head = nn.Linear(8, 3)
        self.neck_under_no_grad = neck_under_no_grad

    def forward(self, x):
        if self.neck_under_no_grad:
            with torch.no_grad():
                features = torch.relu(self.neck(self.backbone(x)))
        else:
            features = torch.relu(self.neck(self.backbone(x)))
        return self.head(features)


def train_steps(watch: LearningWatch, model: nn.Module, optimizer, steps_: int = 4) -> None:
    x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
    for _ in range(steps_):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        watch.before_step(optimizer)
        optimizer.step()
    watch.finish()


# ------------------------------------------------------------------------------------- parameters that never learn
def test_parameters_of_an_optimizer_that_never_get_a_gradient_are_named_at_the_optimizer_line():
    model = Net(neck_under_no_grad=True)
    clock = FakeClock(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    clock.lines[id(optimizer)] = ("train.py", 30)
    watch, found, _ = make_watch(clock, {id(optimizer): "optimizer"})
    train_steps(watch, model, optimizer)
    (finding,) = found
    assert (finding.kind, finding.severity, finding.file, finding.line) == ("training-logic", "warning", "train.py", 30)
    # the backbone and neck both sit under no_grad: four parameters, named by module path
    assert finding.details["parameters"] == [
        "Net.backbone.weight",
        "Net.backbone.bias",
        "Net.neck.weight",
        "Net.neck.bias",
    ]
    assert "never received a gradient in 4 steps" in finding.message
    assert id(optimizer) in watch.explained  # its curves are not judged again (the finding explains them)


def test_a_backbone_frozen_on_purpose_is_silent():
    model = Net()
    model.backbone.requires_grad_(False)
    clock = FakeClock(model)
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    clock.lines[id(optimizer)] = ("train.py", 30)
    watch, found, _ = make_watch(clock)
    train_steps(watch, model, optimizer)
    assert found == []


def test_frozen_parameters_left_in_the_optimizer_and_a_short_run_are_silent():
    model = Net()
    clock = FakeClock(model)
    watch, found, _ = make_watch(clock)
    watch.install()  # sees the load below
    try:
        model.backbone.load_state_dict(nn.Linear(4, 8).state_dict())  # pretrained weights
    finally:
        watch.uninstall()
    model.backbone.requires_grad_(False)  # loaded, then frozen: deliberate, even if still in the optimizer
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    clock.lines[id(optimizer)] = ("train.py", 30)
    train_steps(watch, model, optimizer)
    short = Net(neck_under_no_grad=True)
    short_clock = FakeClock(short)
    short_optimizer = torch.optim.SGD(short.parameters(), lr=0.1)
    short_clock.lines[id(short_optimizer)] = ("train.py", 40)
    watch2, found2, _ = make_watch(short_clock)
    train_steps(watch2, short, short_optimizer, steps_=2)
    assert found == [] and found2 == []


def test_weights_frozen_at_their_random_initialisation_are_found_at_the_freeze_line(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "model = Net()\n"
        "for param in model.backbone.parameters():\n"
        "    param.requires_grad = False\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    )
    model = Net()
    model.backbone.requires_grad_(False)  # nothing was loaded into it: random weights, frozen for good
    clock = FakeClock(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    clock.lines[id(optimizer)] = (str(script), 4)
    watch, found, _ = make_watch(clock, {id(optimizer): "optimizer"})
    train_steps(watch, model, optimizer)
    (finding,) = found
    assert (finding.kind, finding.file, finding.line) == ("training-logic", str(script), 3)
    assert finding.details["check"] == "frozen-at-initialisation"
    assert finding.details["parameters"] == ["Net.backbone.weight", "Net.backbone.bias"]
    assert finding.details["optimizer_line"] == 4


def test_frozen_weights_after_torch_load_or_not_in_the_optimizer_are_silent(tmp_path):
    model = Net()
    model.backbone.requires_grad_(False)
    clock = FakeClock(model)
    watch, found, _ = make_watch(clock)
    torch.save(model, tmp_path / "model.pt")
    watch.install()
    try:  # torch.load ran before training: the weights may come from a checkpoint
        model = torch.load(tmp_path / "model.pt", weights_only=False)
    finally:
        watch.uninstall()
    clock._models = [model]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    clock.lines[id(optimizer)] = ("train.py", 30)
    train_steps(watch, model, optimizer)
    kept_out = Net()
    kept_out.backbone.requires_grad_(False)
    kept_clock = FakeClock(kept_out)
    kept_optimizer = torch.optim.SGD([p for p in kept_out.parameters() if p.requires_grad], lr=0.1)
    kept_clock.lines[id(kept_optimizer)] = ("train.py", 40)
    watch2, found2, _ = make_watch(kept_clock)
    train_steps(watch2, kept_out, kept_optimizer)
    assert found == [] and found2 == []


def test_an_optimizer_with_no_gradient_at_all_is_left_to_the_clearing_check():
    model = Net()
    clock = FakeClock(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    clock.lines[id(optimizer)] = ("train.py", 30)
    watch, found, _ = make_watch(clock)
    for _ in range(4):
        optimizer.zero_grad()
        watch.before_step(optimizer)
    watch.finish()
    assert found == []


class Generator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(2, 2)

    def forward(self, z):
        return self.net(z)


def gan_steps(watch: LearningWatch, netG, netD, optimizerD, optimizerG) -> None:
    for _ in range(4):
        fake = netG(torch.randn(8, 2))
        optimizerD.zero_grad()
        netD(fake.detach()).mean().backward()
        watch.before_step(optimizerD)
        optimizerD.step()
        optimizerG.zero_grad()
        (-netD(fake).mean()).backward()
        watch.before_step(optimizerG)
        optimizerG.step()
    watch.finish()


def test_a_generator_optimizer_given_the_discriminator_parameters_is_found_at_its_line():
    netG, netD = Generator(), nn.Linear(2, 1)
    clock = FakeClock(netD, netG)
    optimizerD = torch.optim.Adam(netD.parameters())
    optimizerG = torch.optim.Adam(netD.parameters())  # the slip
    clock.lines.update({id(optimizerD): ("gan.py", 10), id(optimizerG): ("gan.py", 11)})
    watch, found, _ = make_watch(clock, {id(optimizerD): "optimizerD", id(optimizerG): "optimizerG"})
    gan_steps(watch, netG, netD, optimizerD, optimizerG)
    (finding,) = found
    assert (finding.file, finding.line) == ("gan.py", 11)
    assert finding.details["parameters"] == ["Generator.net.weight", "Generator.net.bias"]
    assert "optimizerG holds parameters another optimizer already holds" in finding.message


def test_each_model_in_its_own_optimizer_is_silent():
    netG, netD = Generator(), nn.Linear(2, 1)
    clock = FakeClock(netD, netG)
    optimizerD, optimizerG = torch.optim.Adam(netD.parameters()), torch.optim.Adam(netG.parameters())
    clock.lines.update({id(optimizerD): ("gan.py", 10), id(optimizerG): ("gan.py", 11)})
    watch, found, _ = make_watch(clock)
    gan_steps(watch, netG, netD, optimizerD, optimizerG)
    assert found == []


# ------------------------------------------------------------------------------------------ hand-written updates
UPDATE_SOURCE = """def train(model, x, y, lr):
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad
"""


def hand_written_run(
    tmp_path, clear: str | None, backwards_per_update: int = 1
) -> tuple[list, set, steps.HandWrittenUpdate]:
    path = tmp_path / "manual.py"
    path.write_text(UPDATE_SOURCE, encoding="utf-8")
    model = nn.Linear(3, 1)
    clock = FakeClock(model)
    clock.loss_at = (str(path), 3)
    watch, found, uncleared = make_watch(clock)
    update = steps.HandWrittenUpdate()
    update.set_parameters(list(model.parameters()))
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    for _ in range(4):
        for _ in range(backwards_per_update):
            ((model(x) - y) ** 2).mean().backward()
            clock.backwards += 1
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.01 * p.grad
                if clear == "none":
                    p.grad = None
                elif clear == "zero":
                    p.grad.zero_()
        watch.on_step(SimpleNamespace(optimizer=update))  # the clock resolves the update at the next forward
    return found, uncleared, update


def test_a_hand_written_update_on_gradients_never_cleared_is_found_at_the_backward_it_applies(tmp_path):
    """As under an optimizer: at the one backward() each update applies, where the clearing belongs."""
    found, uncleared, update = hand_written_run(tmp_path, clear=None)
    (finding,) = found
    assert (finding.kind, finding.line) == ("training-logic", 3)
    assert finding.details["check"] == "gradients-never-cleared" and finding.details["hand_written"]
    assert finding.details["update"]["line"] == 6 and "line 6" in finding.message
    assert id(update) in uncleared  # the curves of this update are not judged (no "lr too high")


def test_a_hand_written_update_of_several_backwards_never_cleared_is_found_at_the_update(tmp_path):
    found, _, _ = hand_written_run(tmp_path, clear=None, backwards_per_update=2)
    (finding,) = found
    assert (finding.kind, finding.line) == ("training-logic", 6) and "update" not in finding.details


@pytest.mark.parametrize("clear", ["none", "zero"])
def test_a_hand_written_update_that_clears_its_gradients_is_silent(tmp_path, clear):
    found, uncleared, _ = hand_written_run(tmp_path, clear=clear)
    assert found == [] and uncleared == set()


# ------------------------------------------------------------------------------------------------ eval mode
class FunctionalDropout(nn.Module):
    """Dropout the way the GCN examples write it: ``F.dropout(..., training=self.training)``, no Dropout module."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden, self.out = nn.Linear(4, 8), nn.Linear(8, 1)

    def forward(self, x):
        return self.out(nn.functional.dropout(self.hidden(x).relu(), 0.5, training=self.training))


def eval_run(leave_in_eval: bool, update: bool = True, model: nn.Module | None = None) -> tuple[list, int]:
    model = model or nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    clock = FakeClock(model)
    watch, found, _ = make_watch(clock)
    watch.install()
    try:
        x = torch.randn(4, 4)
        for _ in range(2):
            model.train()
            watch.model_pass(model, (x,), "train")
            loss = model(x).mean()
            loss.backward()
            watch.backward(loss)
            watch.before_step(optimizer)
            eval_line = _line_here() + 1
            assert model.eval() is model  # the wrapper returns what Module.train returns
            with torch.no_grad():
                watch.model_pass(model, (x,), "val")
                model(x)
            if not leave_in_eval:
                model.train()
            watch.model_pass(model, (x,), "train" if model.training else "val")
            loss = model(x).mean()
            loss.backward()
            watch.backward(loss)
            if update:
                watch.before_step(optimizer)
    finally:
        watch.uninstall()
    assert nn.Module.train.__qualname__ == "Module.train"  # torch's own method is back
    return found, eval_line


def _line_here() -> int:
    import sys

    return sys._getframe(1).f_lineno


def test_backward_through_a_model_left_in_eval_is_found_at_the_eval_call():
    found, eval_line = eval_run(leave_in_eval=True)
    (finding,) = found
    assert (finding.kind, finding.file, finding.line) == ("training-logic", __file__, eval_line)
    assert (
        finding.details["check"] == "backward-in-eval-mode"
        and "(what changes in training mode, dropout, behaves" in finding.message
    )


def test_a_model_whose_own_forward_reads_self_training_counts_as_behaving_differently_in_eval():
    found, eval_line = eval_run(leave_in_eval=True, model=FunctionalDropout())
    (finding,) = found
    assert (finding.file, finding.line) == (__file__, eval_line)
    assert "(what changes in training mode, training-dependent forward, behaves" in finding.message


def test_a_model_switched_back_to_train_is_silent():
    found, _ = eval_run(leave_in_eval=False)
    assert found == []


def test_a_backward_in_eval_mode_that_no_update_applies_is_silent():
    found, _ = eval_run(leave_in_eval=True, update=False)  # input gradients, saliency maps: no training
    assert found == []


# ------------------------------------------------------------------------------------------- graph reused
GAN_SOURCE = """import torch

netG = torch.nn.Linear(2, 2)
netD = torch.nn.Linear(2, 1)
fake = netG(torch.randn(4, 2))
errD = netD(fake).mean()
errD.backward()
errG = -netD(fake).mean()
errG.backward()
"""


def test_a_graph_walked_twice_is_explained_where_the_reused_tensor_fed_the_first_loss(tmp_path):
    """Raised at ``errG.backward()`` (line 9); the ``.detach()`` belongs where ``fake`` fed D's loss (line 6)."""
    path = tmp_path / "gan_undetached.py"
    path.write_text(GAN_SOURCE, encoding="utf-8")
    with pytest.raises(RuntimeError, match="second time") as caught:
        runpy.run_path(str(path))
    (finding,) = explain_graph_reuse(caught.value)
    assert (finding.kind, finding.severity, finding.line) == ("training-logic", "error", 6)
    assert finding.details == {"check": "graph-reused", "tensor": "fake", "raised_line": 9}
    assert "fake.detach()" in finding.message and "the backward() at line 9" in finding.message
    assert reused_tensor(str(path), 9) == "fake"


def test_other_errors_are_not_explained_and_a_detached_tensor_is_not_blamed(tmp_path):
    assert explain_graph_reuse(RuntimeError("mat1 and mat2 shapes cannot be multiplied")) is None
    path = tmp_path / "detached.py"
    source = GAN_SOURCE.replace("errG = -netD(fake).mean()", "errG = -netD(fake.detach()).mean()")
    path.write_text(source, encoding="utf-8")
    assert reused_tensor(str(path), 9) is None
