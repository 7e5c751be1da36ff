"""The first NaN/Inf of a step the outside-modules mode did not observe, found from the loss's autograd graph
(agent/sentinel/graph_search.py), named at the line learned in observed steps (sites.py), and stopped at by a replay
of a function that has returned (call_replay.py); and the same verdict on tests/programs/hand_loss whichever steps the
budget observes."""

import ast
import os
import runpy
import sys
import types

import pytest
import torch
import torch.nn.functional as F

from support.paths import marked_lines, program
from tensorsight.agent.sentinel import call_replay, sites
from tensorsight.agent.sentinel.budget import budget
from tensorsight.agent.sentinel.graph_search import locate

HAND_LOSS = program("hand_loss/train.py")
LOSSES = program("hand_loss/losses.py")


def node_name(birth):
    return type(birth.node).__name__


def test_a_log_of_an_underflowed_softmax_is_the_birth_not_the_product_that_turns_it_into_nan():
    logits = torch.tensor([[200.0, 0.0, 0.0], [0.0, 1.0, 2.0]], requires_grad=True)
    onehot = F.one_hot(torch.tensor([1, 2]), 3).float()
    loss = -(onehot * torch.log(torch.softmax(logits, 1))).sum(1).mean()
    assert not torch.isfinite(loss)
    birth = locate([loss], {})
    assert node_name(birth) == "LogBackward0"
    assert (birth.made.nan, birth.made.neginf) == (0, 2)  # exp(-200) underflows to 0 twice: log(0) = -inf
    assert not birth.carried and birth.exact
    assert torch.isfinite(birth.inputs[0]).all()


def test_a_division_by_a_count_that_is_zero_is_found_through_the_producers_outputs():
    weights = torch.ones(4, requires_grad=True)
    counts = torch.tensor([2.0, 0.0, 1.0, 3.0])
    ratio = (weights * 3) / counts  # the numerator is not saved by the division: it comes from the product's output
    loss = ratio.sum()
    birth = locate([loss], {})
    assert node_name(birth) == "DivBackward0"
    assert birth.made.posinf == 1 and birth.exact


def test_a_value_that_came_in_with_the_data_has_no_birth_in_the_graph():
    weights = torch.ones(3, requires_grad=True)
    data = torch.tensor([1.0, float("nan"), 2.0])
    loss = (torch.log(weights + 1) * data).sum()
    birth = locate([loss], {})
    assert birth is None or node_name(birth) != "LogBackward0"


def test_the_walk_stops_at_module_outputs_known_finite():
    layer = torch.nn.Linear(3, 2)
    out = layer(torch.randn(4, 3))
    loss = torch.log(out - out.detach() - 1).sum()  # log of -1: NaN
    birth = locate([loss], {out.grad_fn: out.detach()})
    assert node_name(birth) == "LogBackward0"
    assert birth.searched < 6  # the linear layer's own nodes were not walked


def test_the_search_changes_nothing_the_program_sees():
    logits = torch.tensor([[300.0, 0.0]], requires_grad=True)
    probs = torch.softmax(logits, 1)
    loss = -torch.log(probs).sum()
    versions = (logits._version, probs._version)
    rng = torch.get_rng_state()
    locate([loss], {})
    assert (logits._version, probs._version) == versions
    assert torch.equal(torch.get_rng_state(), rng)
    loss.backward()  # the graph is still whole: backward runs after the search
    assert logits.grad is not None


def test_sites_name_the_line_of_a_node_type_and_tell_same_type_nodes_apart_by_what_they_consume():
    sites.forget()
    frame = sys._getframe()
    a = torch.ones(2, requires_grad=True)
    first = torch.log(a)  # a LogBackward0 over an AccumulateGrad
    line_first = frame.f_lineno + 1  # learned while the frame is on the next line
    sites.learn(torch.log, "torch.log", first.grad_fn, frame)
    second = torch.log(a * 2)  # a LogBackward0 over a MulBackward0
    sites.learn(torch.log, "torch.log", second.grad_fn, sys._getframe())
    found = sites.sites_for(torch.log(a + 0).grad_fn)  # over an AddBackward0: no exact match, both named
    assert {s.node for s in found} == {"LogBackward0"} and len(found) == 2
    exact = sites.sites_for(torch.log(a).grad_fn)
    assert len(exact) == 1 and exact[0].line == line_first and exact[0].op == "torch.log"
    sites.forget()


def test_a_call_is_read_only_when_its_arguments_run_no_program_code():
    class Batch:
        @property
        def logits(self):  # a property runs the program's code: never read by the replay
            raise AssertionError("read")

    scope = types.SimpleNamespace(f_locals={"batch": Batch(), "values": {"x": torch.ones(2)}}, f_globals={})

    def read(expression):
        return call_replay._value(ast.parse(expression, mode="eval").body, scope)

    assert read("values['x'][0]") == 1.0
    assert read("(values, -3, 'a')")[1:] == (-3, "a")
    for unsafe in ("batch.logits", "len(values)", "values['x'] + 1", "batch[0]"):
        with pytest.raises(call_replay.NotRepeatable):
            read(unsafe)


@pytest.fixture
def unobserved_after(monkeypatch):
    """Past the first steps, the budget observes no step: every birth outside modules is found at a boundary."""

    def from_step(first_steps):
        monkeypatch.setattr(budget, "active", True)
        monkeypatch.setattr(budget, "FIRST_STEPS", first_steps)
        for name in ("SHARE", "TOTAL_SHARE", "MIN_SHARE"):
            monkeypatch.setattr(budget, name, 1e-12)
        monkeypatch.setattr(budget, "MAX_STRIDE", 10**9)
        monkeypatch.setattr(budget, "steps", 0)  # the budget is process-wide: earlier tests ran steps too

    return from_step


def run_hand_loss(monkeypatch, *args):
    monkeypatch.setattr(sys, "argv", [HAND_LOSS, *args])
    monkeypatch.syspath_prepend(os.path.dirname(HAND_LOSS))
    sys.modules.pop("losses", None)
    runpy.run_path(HAND_LOSS, run_name="__main__")


@pytest.mark.parametrize("first_steps", [10**6, 20], ids=["every step observed", "unobserved after step 20"])
def test_the_hand_written_loss_in_its_own_module_is_named_at_its_torch_log_line(
    armed, monkeypatch, unobserved_after, first_steps
):
    unobserved_after(first_steps)
    sites.forget()
    run_hand_loss(monkeypatch)
    births = [e for e in armed if e["type"] == "nonfinite"]
    assert len(births) == 1
    birth = births[0]
    assert (birth["file"], birth["line"]) == (LOSSES, marked_lines(LOSSES, "@nan")[""])
    assert birth["op"] == "torch.log" and birth["neginf"] == 1 and birth["phase"] == "forward"
    assert "(found when" not in birth["message"]  # replayed in the function: no later boundary named


def test_the_inline_loss_of_an_unobserved_step_is_found_from_its_graph(armed, monkeypatch, unobserved_after):
    unobserved_after(20)
    sites.forget()
    run_hand_loss(monkeypatch, "--inline")
    births = [e for e in armed if e["type"] == "nonfinite"]
    assert len(births) == 1
    line = marked_lines(HAND_LOSS, "@nan")["inline"]
    assert (births[0]["file"], births[0]["line"]) == (HAND_LOSS, line)
    assert births[0]["op"] == "torch.log"
    assert "found when backward() was called" in births[0]["message"]


def test_a_site_never_observed_is_still_named_by_its_op_without_a_line(armed, monkeypatch, unobserved_after):
    unobserved_after(0)  # no step observed: no site learned
    sites.forget()
    run_hand_loss(monkeypatch, "--inline")
    births = [e for e in armed if e["type"] == "nonfinite"]
    assert len(births) == 1 and births[0]["op"] == "torch.log"
    assert "its line was not seen" in births[0]["message"]
    assert "learning rate" not in births[0]["message"]
