"""agent.measurement.gradient_clearing in-process: an optimizer whose parameters get no gradient, twice in a row after
a backward, is one finding where the graph is cut; a closure step and a frozen model are not judged."""

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
