"""Cross-rank diagnosis: which rank diverges, and whether a rank that does not progress is waiting or hung."""

import math
from typing import Any

import pytest

from tensorsight.core.findings import Finding
from tensorsight.core.ranks import (
    RankState,
    classify_ranks,
    diverging_rank,
    hang_findings,
    latest_states,
    series_from_scalars,
)

pytestmark = pytest.mark.numpy_only  # also run under Python 3.10, 3.12 and 3.13 (scripts/test.sh)

WHERE: dict[str, Any] = {"file": "/w/train.py", "line": 42}


def steady(level: float, steps: range, wobble: float = 0.1) -> dict[int, float]:
    """A loss that wobbles around ``level`` (deterministic)."""
    return {s: level * (1 + wobble * math.sin(s)) for s in steps}


# ---- divergence ---------------------------------------------------------------------------------------------------


def test_nan_on_one_rank_names_that_rank_and_the_first_step():
    series = {0: steady(0.5, range(1, 7)), 1: steady(0.5, range(1, 7))}
    series[1][3] = float("nan")
    series[1][4] = series[0][4] = float("nan")  # DDP spreads it to every rank one step later
    finding = diverging_rank(series, "loss", **WHERE)
    assert isinstance(finding, Finding)
    assert (finding.kind, finding.severity, finding.rank, finding.step) == ("dynamics", "error", 1, 3)
    assert (finding.file, finding.line) == ("/w/train.py", 42)
    assert finding.message.startswith("loss became NaN on this rank while rank 0 stayed finite")
    assert "step 3" not in finding.message and "rank 1" not in finding.message  # fields, said by who shows it
    assert finding.details["values"] == {"0": pytest.approx(series[0][3]), "1": "NaN"}


def test_every_rank_nonfinite_at_once_blames_no_rank():
    series = {r: {1: 0.5, 2: float("inf")} for r in range(3)}
    assert diverging_rank(series, "loss", **WHERE) is None


def test_two_ranks_the_one_whose_loss_blows_up_is_named():
    steps = range(1, 13)
    series = {0: steady(0.5, steps), 1: steady(0.5, steps)}
    for s in range(8, 13):
        series[1][s] = 5.0 + s  # rank 1 drifts to ~10x while rank 0 stays
    finding = diverging_rank(series, "loss", **WHERE)
    assert finding is not None
    assert (finding.severity, finding.rank, finding.details["reason"]) == ("warning", 1, "drift")
    assert finding.step == 8 and finding.details["steps"] == [8, 12]
    assert finding.message.startswith("loss on this rank diverges from the other ranks: 15 against")
    assert finding.message.endswith(", through step 12")


def test_two_ranks_the_one_that_collapses_is_named_too():
    steps = range(1, 13)
    series = {0: steady(2.0, steps), 1: steady(2.0, steps)}
    for s in range(8, 13):
        series[0][s] = 0.01
    finding = diverging_rank(series, "grad_norm", **WHERE)
    assert finding is not None and finding.rank == 0


def test_three_or_more_ranks_the_outlier_is_named():
    steps = range(1, 11)
    series = {r: steady(1.0 + 0.1 * r, steps) for r in range(4)}
    for s in range(6, 11):
        series[2][s] = 40.0
    finding = diverging_rank(series, "grad_norm", **WHERE)
    assert finding is not None and finding.rank == 2
    assert "median of ranks 0, 1, 3" in finding.message


def test_ordinary_rank_to_rank_noise_is_not_divergence():
    steps = range(1, 21)
    # Different shards give different losses (here up to 2x), all falling together: no finding.
    series = {r: {s: (1.0 + 0.5 * r) * (0.9**s) * (1 + 0.2 * math.sin(3 * s + r)) for s in steps} for r in range(3)}
    assert diverging_rank(series, "loss", **WHERE) is None
    assert diverging_rank({0: series[0], 1: series[2]}, "loss", **WHERE) is None


def test_a_gap_present_from_the_start_is_not_divergence():
    steps = range(1, 13)
    series = {0: steady(0.5, steps), 1: steady(5.0, steps)}  # e.g. an unbalanced shard, constant ratio
    assert diverging_rank(series, "loss", **WHERE) is None


def test_one_spike_is_not_divergence_but_a_sustained_departure_is():
    steps = range(1, 13)
    series = {0: steady(0.5, steps), 1: steady(0.5, steps)}
    series[1][10] = 50.0
    assert diverging_rank(series, "loss", **WHERE) is None


def test_only_steps_every_rank_reported_are_compared_and_degenerate_input_is_none():
    assert diverging_rank({0: {1: 1.0}}, "loss", **WHERE) is None
    assert diverging_rank({0: {1: 1.0}, 1: {2: float("nan")}}, "loss", **WHERE) is None  # no common step
    assert diverging_rank({}, "loss", **WHERE) is None
    assert diverging_rank({0: {1: 1.0}, 1: {1: 2.0}}, "loss", ratio=0.5, **WHERE) is None


def test_series_from_scalars_events():
    events = [
        {"type": "scalars", "rank": 0, "step": 1, "values": {"loss": 0.5, "lr": 0.1}},
        {"type": "scalars", "rank": 1, "step": 1, "values": {"loss": "nan"}},
        {"type": "scalars", "step": 1, "values": {"loss": 9.0}},  # no rank: not distributed
        {"type": "scalars", "rank": 1, "step": 2, "values": {"lr": 0.1}},
        {"type": "scalars", "rank": 1, "step": 3, "values": {"loss": "oops"}},
        {"type": "phases", "rank": 0, "step": 1},
    ]
    series = series_from_scalars(events, "loss")
    assert series[0] == {1: 0.5}
    assert list(series[1]) == [1] and math.isnan(series[1][1])


# ---- waiting or hung ----------------------------------------------------------------------------------------------


def state(rank: int, kind: str, since: float, seen: float = 100.0, **extra) -> RankState:
    return RankState(rank=rank, state=kind, since=since, seen=seen, heartbeat=5.0, **extra)


def test_a_rank_waiting_while_another_is_stopped_in_the_debugger_is_waiting_not_hung():
    states = {
        0: state(
            0, "waiting", since=10.0, seen=999.0, file="/w/train.py", line=63, blocked_in="torch.autograd.graph.x"
        ),
        1: state(1, "stopped", since=9.0, seen=999.0, file="/w/train.py", line=47),
    }
    # 990 s of waiting would be "hung" on its own; rank 1 is stopped in the debugger, so it is not.
    verdicts = classify_ranks(states, now=1000.0, hang_after=300)
    assert verdicts[0].verdict == "waiting" and verdicts[0].waiting_for == (1,)
    assert verdicts[0].message == (
        "rank 0 is waiting in torch.autograd.graph.x at train.py:63 for rank 1, which is stopped in the debugger "
        "(not hung)"
    )
    assert (
        verdicts[1].verdict == "stopped" and verdicts[1].message == "rank 1 is stopped in the debugger at train.py:47"
    )
    assert hang_findings(verdicts, states) == []


def test_waiting_long_with_nobody_stopped_is_hung_and_becomes_a_finding():
    states = {
        0: state(0, "waiting", since=0.0, seen=400.0, file="/w/train.py", line=63, step=7),
        1: state(1, "running", since=0.0, seen=400.0),
    }
    assert classify_ranks(states, now=100.0, hang_after=300)[0].verdict == "waiting"
    verdicts = classify_ranks(states, now=401.0, hang_after=300)
    assert verdicts[0].verdict == "hung" and verdicts[0].waiting_for == (1,)
    assert "no rank is stopped in the debugger: the job looks hung; rank 1 never joined it" in verdicts[0].message
    (finding,) = hang_findings(verdicts, states)
    assert (finding.kind, finding.severity, finding.rank, finding.line, finding.step) == (
        "performance",
        "error",
        0,
        63,
        7,
    )


def test_a_rank_that_stops_reporting_is_silent_and_its_waiters_hung():
    states = {
        0: state(0, "waiting", since=90.0, seen=119.0),
        1: state(1, "stopped", since=50.0, seen=100.0),  # its last heartbeat is 20 s old (4 missed)
    }
    verdicts = classify_ranks(states, now=120.0)
    assert verdicts[1].verdict == "silent"
    assert verdicts[0].verdict == "hung" and verdicts[0].waiting_for == (1,)
    assert "which stopped reporting" in verdicts[0].message


def test_latest_states_keeps_the_newest_well_formed_report_per_rank():
    events = [
        {"type": "rank-state", "rank": 0, "state": "running", "since": 1.0, "time": 1.0},
        {"type": "rank-state", "rank": 0, "state": "waiting", "since": 2.0, "time": 5.0, "line": 63, "file": "/a.py"},
        {"type": "rank-state", "rank": 0, "state": "running", "since": 0.5, "time": 0.5},  # late, older
        {"type": "rank-state", "rank": 1, "state": "asleep", "time": 6.0},  # unknown state: skipped
        {"type": "rank-state", "state": "running", "time": 6.0},  # no rank: skipped
        {"type": "scalars", "rank": 1},
    ]
    states = latest_states(events)
    assert list(states) == [0]
    assert (states[0].state, states[0].since, states[0].line, states[0].where()) == ("waiting", 2.0, 63, "a.py:63")
    with pytest.raises(ValueError, match="unknown rank state"):
        RankState.from_event({"rank": 0, "state": "asleep", "time": 1.0})
