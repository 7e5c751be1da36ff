"""agent.measurement.gradient_clearing in-process: an optimizer whose parameters get no gradient, twice in a row after
a backward, is one finding where the graph is cut; a closure step and a frozen model are not judged; gradients never
cleared are reported at the one backward() a step applies, at the step when it applies several."""

from __future__ import annotations

import pytest

from tensorsight.agent.measurement.gradient_clearing import ClearingWatch, graph_cut_above

torch = pytest.importorskip("torch")

SOURCE = """def train_step(netD, netG, optimizerG, noise):
    fake = netG(noise)
    optimizerG.zero_grad()
    output = netD(fake.detach())  # the cut
    loss = output.mean()
    loss.backward()
    print(loss.item())
    optimizerG.step()
"""


def test_the_cut_is_the_nearest_graph_cut_above_the_backward(tmp_path):
    path = tmp_path / "gan.py"
    path.write_text(SOURCE, encoding="utf-8")
    step_line = SOURCE.splitlines().index("    optimizerG.step()") + 1
    assert graph_cut_above(str(path), step_line) == (str(path), 4)  # not the .item() after backward()
    assert graph_cut_above(str(path), 3) is None  # no backward() between the function start and the line


def run_steps(watch: ClearingWatch, optimizer, backwards: list[int], closure: bool = False) -> None:
    for _ in range(3):
        backwards[0] += 1  # one backward() per step, which reached none of the optimizer's parameters
        optimizer.zero_grad()
        watch.before_step(optimizer, "optimizerG", closure)
        optimizer.step()


def make_watch(found: list) -> tuple[ClearingWatch, list[int]]:
    backwards = [0]
    return ClearingWatch(torch, lambda: backwards[0], lambda: ("train.py", 12), found.append), backwards


def test_steps_with_no_gradient_after_a_backward_are_one_finding():
    found: list = []
    watch, backwards = make_watch(found)
    generator = torch.nn.Linear(2, 2)
    run_steps(watch, torch.optim.SGD(generator.parameters(), lr=0.1), backwards)
    (finding,) = found
    assert (finding.kind, finding.file, finding.line) == ("training-logic", "train.py", 12)
    assert finding.details["check"] == "no-gradient" and "optimizerG.step() has nothing to apply" in finding.message


def test_a_closure_step_and_a_frozen_model_are_not_judged():
    found: list = []
    watch, backwards = make_watch(found)
    model = torch.nn.Linear(2, 2)
    run_steps(watch, torch.optim.SGD(model.parameters(), lr=0.1), backwards, closure=True)
    frozen = torch.nn.Linear(2, 2).requires_grad_(False)
    run_steps(watch, torch.optim.SGD(frozen.parameters(), lr=0.1), backwards)
    assert found == []


def uncleared_steps(backwards_per_step: int, closure: bool = False) -> list:
    """Three steps of a model whose gradients nothing clears, each after ``backwards_per_step`` real backward() calls
    (reported by the clock's listener at train.py:20, 21...); the step is at train.py:30."""
    found: list = []
    line = [30]
    counted = [0]
    watch = ClearingWatch(torch, lambda: counted[0], lambda: ("train.py", line[0]), found.append)
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        for index in range(backwards_per_step):
            model(torch.ones(1, 2)).sum().backward()
            counted[0] += 1
            line[0] = 20 + index
            watch.backward_seen(None)
        line[0] = 30
        watch.before_step(optimizer, "optimizer", closure)
        optimizer.step()
    return found


def test_gradients_never_cleared_are_reported_at_the_one_backward_each_step_applies():
    (finding,) = uncleared_steps(1)
    assert (finding.file, finding.line) == ("train.py", 20)
    assert finding.details["check"] == "gradients-never-cleared"
    assert (finding.details["step_file"], finding.details["step_line"]) == ("train.py", 30)
    assert "(line 30)" in finding.message and "right before backward()" in finding.message


def test_several_backwards_per_step_keep_the_finding_at_the_step():
    (finding,) = uncleared_steps(2)  # accumulation without clearing: the windows meet at the step
    assert (finding.file, finding.line) == ("train.py", 30)
    assert "step_line" not in finding.details and "once per step" in finding.message
