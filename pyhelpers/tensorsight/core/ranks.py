"""Cross-rank diagnosis for distributed training (torchrun, DistributedDataParallel): pure functions, no I/O.

The language server's runtime hub receives events from every rank of a job and calls these to answer two questions
a per-process view cannot:

- Which rank diverges? ``diverging_rank`` compares the per-rank series of one scalar (``loss``, ``grad_norm`` from
  the ``scalars`` events) and returns a ``dynamics`` finding naming the rank whose values became non-finite while the
  others stayed finite, or drifted away from the others by more than a factor.
- Is a rank that does not progress waiting or hung? ``classify_ranks`` reads the latest ``rank-state`` heartbeat of
  each rank (sent by ``tensorsight.agent.distributed.ranks``) and tells "waiting in a collective because rank 1 is
  stopped
  in the debugger" apart from "waiting although nobody is stopped: hung" and from "stopped reporting".

The ``rank-state`` event (agent -> hub), one per change of state and one every ``heartbeat`` seconds otherwise:
``{"type": "rank-state", "rank", "local_rank", "world_size", "state": "running"|"stopped"|"waiting", "since",
"heartbeat", "step", "file"?, "line"?, "blocked_in"?, "pid", "time"}``; ``since`` and ``time`` are epoch seconds,
``file``/``line`` the user's line where the rank is stopped or the user's call that waits (e.g. ``loss.backward()``
while DDP all-reduces gradients), ``blocked_in`` the torch function it waits in.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tensorsight.core.findings import Finding
from tensorsight.core.l10n import t

RANK_STATES = ("running", "stopped", "waiting")
VERDICTS = ("running", "stopped", "waiting", "hung", "silent")

# A rank that misses this many heartbeats in a row is "silent": exited, killed, or frozen with its reporter.
MISSED_HEARTBEATS = 3.0


# ---- waiting or hung ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RankState:
    """The latest ``rank-state`` report of one rank."""

    rank: int
    state: str
    since: float
    seen: float
    heartbeat: float = 5.0
    step: int | None = None
    file: str | None = None
    line: int | None = None
    blocked_in: str | None = None

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> RankState:
        """Parse a ``rank-state`` event; raises ValueError on a malformed one."""
        try:
            state = str(event["state"])
            if state not in RANK_STATES:
                raise ValueError(f"unknown rank state {state!r}; expected one of {', '.join(RANK_STATES)}")
            seen = float(event["time"])
            return cls(
                rank=int(event["rank"]),
                state=state,
                since=float(event.get("since", seen)),
                seen=seen,
                heartbeat=float(event.get("heartbeat", 5.0)),
                step=None if event.get("step") is None else int(event["step"]),
                file=None if event.get("file") is None else str(event["file"]),
                line=None if event.get("line") is None else int(event["line"]),
                blocked_in=None if event.get("blocked_in") is None else str(event["blocked_in"]),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed rank-state event: {exc}") from exc

    def where(self) -> str:
        """``train.py:63`` (the user's line), or an empty string when unknown."""
        if self.file is None or self.line is None:
            return ""
        return f"{os.path.basename(self.file)}:{self.line}"


@dataclass(frozen=True)
class RankVerdict:
    """What the hub should say about one rank: ``verdict`` is one of VERDICTS."""

    rank: int
    verdict: str
    message: str
    waiting_for: tuple[int, ...] = ()


def latest_states(events: Iterable[Mapping[str, Any]]) -> dict[int, RankState]:
    """The newest well-formed ``rank-state`` per rank from a stream of events (other types and bad ones skipped)."""
    latest: dict[int, RankState] = {}
    for event in events:
        if event.get("type") != "rank-state":
            continue
        try:
            state = RankState.from_event(event)
        except ValueError:
            continue
        previous = latest.get(state.rank)
        if previous is None or state.seen >= previous.seen:
            latest[state.rank] = state
    return latest


def classify_ranks(states: Mapping[int, RankState], now: float, *, hang_after: float = 300.0) -> dict[int, RankVerdict]:
    """Classify every rank of a job from its latest report.

    - ``silent``: no report for ``MISSED_HEARTBEATS`` heartbeats (the process exited, was killed, or is frozen);
    - ``stopped``: stopped in the debugger (a breakpoint, a step, or the NaN sentinel);
    - ``waiting``: blocked in a collective while another rank is stopped in the debugger (expected: DDP cannot
      all-reduce without it), or for less than ``hang_after`` seconds while the others still compute;
    - ``hung``: blocked in a collective for ``hang_after`` seconds or more with no rank stopped in the debugger, or
      waiting for a rank that went silent;
    - ``running``: making progress.
    """
    silent = {r for r, s in states.items() if now - s.seen > MISSED_HEARTBEATS * max(s.heartbeat, 0.1)}
    stopped = sorted(r for r, s in states.items() if r not in silent and s.state == "stopped")
    running = sorted(r for r, s in states.items() if r not in silent and s.state == "running")
    verdicts: dict[int, RankVerdict] = {}
    for rank, state in sorted(states.items()):
        where = state.where()
        at = t(" at {0}", where) if where else ""
        if rank in silent:
            verdicts[rank] = RankVerdict(
                rank,
                "silent",
                t(
                    "rank {0} has sent no report for {1} s: exited, killed or frozen",
                    rank,
                    f"{now - state.seen:.0f}",
                ),
            )
        elif state.state == "stopped":
            verdicts[rank] = RankVerdict(rank, "stopped", t("rank {0} is stopped in the debugger{1}", rank, at))
        elif state.state == "running":
            verdicts[rank] = RankVerdict(rank, "running", t("rank {0} is running", rank))
        else:
            verdicts[rank] = _waiting_verdict(
                state, now, at, [r for r in stopped if r != rank], sorted(silent), running, hang_after
            )
    return verdicts


def _waiting_verdict(
    state: RankState,
    now: float,
    at: str,
    stopped: list[int],
    silent: list[int],
    running: list[int],
    hang_after: float,
) -> RankVerdict:
    rank = state.rank
    waited = max(0.0, now - state.since)
    inside = t(" in {0}", state.blocked_in) if state.blocked_in else t(" in a collective")
    if stopped:
        who = _rank_list(stopped)
        waiting = (
            t("rank {0} is waiting{1}{2} for {3}, which is stopped in the debugger (not hung)", rank, inside, at, who)
            if len(stopped) == 1
            else t(
                "rank {0} is waiting{1}{2} for {3}, which are stopped in the debugger (not hung)", rank, inside, at, who
            )
        )
        return RankVerdict(rank, "waiting", waiting, tuple(stopped))
    if silent:
        return RankVerdict(
            rank,
            "hung",
            t(
                "rank {0} has waited {1} s{2}{3} for {4}, which stopped reporting",
                rank,
                f"{waited:.0f}",
                inside,
                at,
                _rank_list(silent),
            ),
            tuple(silent),
        )
    if waited >= hang_after:
        suspects = t("; {0} never joined it", _rank_list(running)) if running else ""
        return RankVerdict(
            rank,
            "hung",
            t(
                "rank {0} has waited {1} s{2}{3} and no rank is stopped in the debugger: the job looks hung{4}",
                rank,
                f"{waited:.0f}",
                inside,
                at,
                suspects,
            ),
            tuple(running),
        )
    return RankVerdict(
        rank,
        "waiting",
        t("rank {0} is waiting{1}{2} for the other ranks ({3} s)", rank, inside, at, f"{waited:.0f}"),
        tuple(running),
    )


def hang_findings(verdicts: Mapping[int, RankVerdict], states: Mapping[int, RankState]) -> list[Finding]:
    """A ``performance`` error at the user's waiting line for each hung rank whose line is known."""
    found: list[Finding] = []
    for rank, verdict in sorted(verdicts.items()):
        state = states.get(rank)
        if verdict.verdict != "hung" or state is None or state.file is None or state.line is None:
            continue
        found.append(
            Finding(
                kind="performance",
                severity="error",
                message=verdict.message,
                file=state.file,
                line=state.line,
                step=state.step,
                rank=rank,
                details={"verdict": "hung", "waiting_for": list(verdict.waiting_for), "blocked_in": state.blocked_in},
            )
        )
    return found


def _rank_list(ranks: Sequence[int]) -> str:
    listed = ", ".join(str(r) for r in ranks)
    return t("rank {0}", listed) if len(ranks) == 1 else t("ranks {0}", listed)


# ---- divergence ---------------------------------------------------------------------------------------------------


def series_from_scalars(events: Iterable[Mapping[str, Any]], metric: str) -> dict[int, dict[int, float]]:
    """``{rank: {step: value}}`` of one metric from ``scalars`` events that carry a rank (others are skipped)."""
    series: dict[int, dict[int, float]] = {}
    for event in events:
        if event.get("type") != "scalars" or event.get("rank") is None or event.get("step") is None:
            continue
        values = event.get("values")
        if not isinstance(values, Mapping) or metric not in values:
            continue
        try:
            series.setdefault(int(event["rank"]), {})[int(event["step"])] = float(values[metric])
        except (TypeError, ValueError):
            continue
    return series


def diverging_rank(
    series: Mapping[int, Mapping[int, float]],
    metric: str,
    *,
    file: str,
    line: int,
    ratio: float = 3.0,
    window: int = 5,
) -> Finding | None:
    """A ``dynamics`` finding naming the rank whose ``metric`` diverges from the other ranks', or None.

    ``series`` maps rank -> {step: value}; only steps every rank reported are compared. ``file``/``line`` is the
    user's line the finding points at (the training loop, or where the metric is computed). In order:

    1. non-finite: the first step where some ranks, but not all, report NaN/Inf names the first of them (error);
    2. drift: over the last ``window`` common steps, a rank sits ``ratio`` times or more away from the others
       (log scale, medians, so one noisy step does not count) while it did not at the start (warning). With three
       or more ranks "the others" is the median rank; with two, the culprit is the rank whose own level moved most.
    """
    ranks = sorted(series)
    if len(ranks) < 2 or ratio <= 1.0 or window < 1:
        return None
    common = sorted(set.intersection(*(set(series[r]) for r in ranks)))
    if not common:
        return None
    found = _nonfinite_divergence(series, ranks, common, metric, file, line)
    if found is not None:
        return found
    finite_steps = [s for s in common if all(math.isfinite(series[r][s]) for r in ranks)]
    if len(finite_steps) < 2:
        return None
    recent = finite_steps[-window:]
    baseline = finite_steps[: min(window, len(finite_steps) - len(recent))]
    logs = {r: {s: _log_magnitude(series[r][s]) for s in finite_steps} for r in ranks}
    culprit = (
        _pair_culprit(logs, ranks, recent, baseline, math.log(ratio))
        if len(ranks) == 2
        else _outlier_culprit(logs, ranks, recent, baseline, math.log(ratio))
    )
    if culprit is None:
        return None
    return _drift_finding(series, culprit, ranks, recent, metric, file, line)


def _nonfinite_divergence(
    series: Mapping[int, Mapping[int, float]], ranks: list[int], common: list[int], metric: str, file: str, line: int
) -> Finding | None:
    for step in common:
        bad = [r for r in ranks if not math.isfinite(series[r][step])]
        if bad and len(bad) < len(ranks):
            rank = bad[0]
            good = [r for r in ranks if r not in bad]
            values = {str(r): _wire_number(series[r][step]) for r in ranks}
            return Finding(
                kind="dynamics",
                severity="error",
                message=t(
                    "{metric} became {value} on this rank while {good} stayed finite: the problem starts here "
                    "(its data shard or its own computation)",
                    metric=metric,
                    value=_describe(series[rank][step]),
                    good=_rank_list(good),
                ),
                file=file,
                line=line,
                step=step,
                rank=rank,
                details={"metric": metric, "reason": "nonfinite", "ranks": bad, "values": values},
            )
    return None


def _pair_culprit(
    logs: Mapping[int, Mapping[int, float]], ranks: list[int], recent: list[int], baseline: list[int], threshold: float
) -> int | None:
    low, high = ranks
    gap_now = statistics.median(logs[high][s] - logs[low][s] for s in recent)
    gap_before = statistics.median(logs[high][s] - logs[low][s] for s in baseline) if baseline else 0.0
    if abs(gap_now - gap_before) < threshold:
        return None
    if not baseline:
        return high if gap_now > 0 else low  # no history: blame the blow-up, the larger magnitude

    def moved(rank: int) -> float:
        return abs(
            statistics.median(logs[rank][s] for s in recent) - statistics.median(logs[rank][s] for s in baseline)
        )

    return max(ranks, key=moved)


def _outlier_culprit(
    logs: Mapping[int, Mapping[int, float]], ranks: list[int], recent: list[int], baseline: list[int], threshold: float
) -> int | None:
    def departure(rank: int, steps: list[int]) -> float:
        if not steps:
            return 0.0
        return statistics.median(logs[rank][s] - statistics.median(logs[r][s] for r in ranks) for s in steps)

    growth = {r: abs(departure(r, recent) - departure(r, baseline)) for r in ranks}
    culprit = max(ranks, key=lambda r: growth[r])
    return culprit if growth[culprit] >= threshold else None


def _drift_finding(
    series: Mapping[int, Mapping[int, float]],
    culprit: int,
    ranks: list[int],
    recent: list[int],
    metric: str,
    file: str,
    line: int,
) -> Finding:
    others = [r for r in ranks if r != culprit]
    mine = statistics.median(series[culprit][s] for s in recent)
    theirs = statistics.median(series[r][s] for r in others for s in recent)
    span = t(", through step {0}", recent[-1]) if recent[-1] != recent[0] else ""  # from ``step``, the field
    return Finding(
        kind="dynamics",
        severity="warning",
        message=t(
            "{metric} on this rank diverges from the other ranks: {mine} against {theirs} ({others}){span}",
            metric=metric,
            mine=f"{mine:.4g}",
            theirs=f"{theirs:.4g}",
            others=t("median of {0}", _rank_list(others)) if len(others) > 1 else _rank_list(others),
            span=span,
        ),
        file=file,
        line=line,
        step=recent[0],
        rank=culprit,
        details={
            "metric": metric,
            "reason": "drift",
            "steps": [recent[0], recent[-1]],
            "values": {str(r): _wire_number(statistics.median(series[r][s] for s in recent)) for r in ranks},
        },
    )


def _log_magnitude(value: float) -> float:
    return math.log(abs(value) + 1e-12)


def _describe(value: float) -> str:
    return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")


def _wire_number(value: float) -> float | str:
    """JSON has no NaN/Inf: non-finite values travel as their name."""
    return value if math.isfinite(value) else _describe(value)
