"""The sentinel's budget for ops outside modules (agent/sentinel/budget.py): which steps the outside-modules mode
observes, from the cost it records, and how a report explains a step that was not observed."""

import pytest
import torch

from tensorsight.agent.sentinel.budget import Budget
from tensorsight.agent.sentinel.state import st


@pytest.fixture(autouse=True)
def observing():
    saved = st.observing
    st.observing = True
    yield
    st.observing = saved


def test_the_first_steps_are_observed_then_one_in_probe_every_is_left_unobserved():
    budget = Budget()
    observed = [budget.period_ended() for _ in range(100)]
    assert all(observed[: Budget.FIRST_STEPS])
    unobserved = [step for step, seen in enumerate(observed, start=1) if not seen]
    assert unobserved == [75, 100]  # multiples of PROBE_EVERY past the first steps
    assert budget.steps == 100 and budget.stride == 1


def test_a_diagnostic_run_observes_every_step():
    budget = Budget()
    budget.active = False
    assert all(budget.period_ended() for _ in range(120))


def test_spent_accumulates_until_the_period_ends():
    budget = Budget()
    budget.spent(0.5)
    budget.spent(0.25)
    assert (budget.ops, budget.check_seconds) == (2, 0.75)
    budget.period_ended()
    assert (budget.ops, budget.check_seconds) == (0, 0.0)
    assert len(budget.estimates) == 1 and budget.estimates[0] > 0  # an observed step with ops records its cost


def test_an_expensive_share_observes_one_step_in_stride():
    budget = Budget()
    budget.steps = Budget.FIRST_STEPS
    budget.estimates.extend([0.3, 0.3, 0.3])  # 0.3 / 0.07 = 4.3 times the share
    observed = [budget.period_ended() for _ in range(10)]
    assert budget.stride == 5
    assert [Budget.FIRST_STEPS + i + 1 for i, seen in enumerate(observed) if seen] == [55, 60]


def test_the_stride_is_capped():
    budget = Budget()
    budget.estimates.extend([500.0] * 3)
    budget.period_ended()
    assert budget.stride == Budget.MAX_STRIDE


def test_the_share_is_the_median_and_takes_observed_against_plain_steps():
    budget = Budget()
    budget.estimates.extend([0.01, 9.0, 0.02])  # one slow step does not decide
    assert budget.share == 0.02
    budget.observed.extend([2.0, 2.0, 2.0])
    budget.plain.extend([1.0, 1.0, 1.0])
    assert budget.share == pytest.approx(1.0)


def test_unobserved_steps_are_timed_as_plain():
    budget = Budget()
    st.observing = False
    budget.period_ended()
    assert len(budget.plain) == 1 and not budget.observed


def test_the_note_names_the_share_and_the_stride():
    budget = Budget()
    budget.estimates.extend([0.3, 0.3, 0.3])
    budget.period_ended()
    note = budget.note()
    assert "costs 30% of a step" in note and "one step in 5" in note


def test_what_the_boundary_checks_cost_is_taken_from_the_share_of_the_outside_mode():
    budget = Budget()
    budget.steps = Budget.FIRST_STEPS
    budget.estimates.extend([0.08, 0.08, 0.08])
    assert budget.allowed == Budget.SHARE  # no boundary cost seen yet: the mode may take its whole share
    for _ in range(3):  # periods of 1 s in which the boundary hooks took 60 ms
        budget.started -= 1.0
        budget.boundary_spent(0.06)
        budget.period_ended()
    assert budget.boundary_seconds == 0.0  # counted per period
    assert budget.allowed == pytest.approx(Budget.TOTAL_SHARE - 0.06, abs=2e-3)
    assert budget.stride == 2  # 0.08 against about 0.04 left


def test_boundary_checks_costing_the_whole_target_leave_the_mode_its_minimum():
    budget = Budget()
    budget.boundary_shares.extend([0.5, 0.5, 0.5])
    assert budget.allowed == Budget.MIN_SHARE


def test_the_real_boundary_hooks_report_their_own_time(armed):
    from tensorsight.agent.sentinel.budget import budget as live

    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    live.boundary_shares.clear()
    for _ in range(3):
        optimizer.zero_grad()
        model(torch.ones(3, 4)).sum().backward()
        optimizer.step()
    assert len(live.boundary_shares) >= 2
    assert all(0.0 < share < 1.0 for share in list(live.boundary_shares)[1:])  # each period after the first
