"""One distributed run's ranks as the server tracks them: latest heartbeats, per-rank train series, verdicts.

``runtime_view`` keeps one ``RankBook`` per debug session and feeds it each rank's ``rank-state`` heartbeat
(``record_state``) and train ``loss`` / ``grad_norm`` per step (``record_scalars``); ``RuntimeView.check_ranks`` (the
server calls it on its timer and after rank events) asks ``check`` to classify the ranks with ``core.ranks``
(running, stopped, waiting for a stopped rank, hung, silent, finished) and to look for a diverging rank or a hang.
Each finding is raised once: per (metric, rank, reason) for divergence, per waiting episode for a hang. Pure: no I/O,
no LSP types; bounded in ranks and steps so a long run costs the same at step 10 and at step 100 000.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tensorsight.core.findings import Finding
from tensorsight.core.ranks import RankState, RankVerdict, classify_ranks, diverging_rank, hang_findings

RANK_METRICS = ("loss", "grad_norm")  # the train scalars compared across ranks
# Per rank and metric the book keeps the run's first COMPARE_STEPS steps (the "before" a drift is measured against)
# and its newest ones, MAX_RANK_STEPS in all (room for one rank's events arriving late); diverging_rank is shown the
# first and last COMPARE_STEPS common steps (its windows are 5) plus those new since the last comparison, so each
# check costs the same at step 10 and at step 100 000.
MAX_RANK_STEPS = 256
COMPARE_STEPS = 10
MAX_RANKS = 1024  # ranks tracked per session; reports from more are ignored
HANG_AFTER_SECONDS = 300.0  # a collective waited on this long with no rank stopped in the debugger is a hang


@dataclass
class RankCheck:
    """What a check found: verdicts to announce (when ``changed``), new findings and the paths they touch."""

    verdicts: list[dict[str, Any]] = field(default_factory=list)
    changed: bool = False  # the verdicts or their messages differ from the last published ones
    status: bool = False  # some rank's verdict itself changed (worth a status notification)
    findings: list[Finding] = field(default_factory=list)
    diagnostics: set[str] = field(default_factory=set)  # filled by the view once it has stored the findings


@dataclass
class RankBook:
    """One session's view of its ranks: latest heartbeats, bounded per-rank series, what was already published."""

    states: dict[int, RankState] = field(default_factory=dict)
    pids: dict[int, int] = field(default_factory=dict)  # rank -> pid of its latest rank-state
    series: dict[str, dict[int, dict[int, float]]] = field(default_factory=dict)  # metric -> rank -> step -> value
    latest_step: dict[str, dict[int, int]] = field(default_factory=dict)  # metric -> rank -> newest step
    compared_through: dict[str, int] = field(default_factory=dict)  # metric -> newest step every rank had, last check
    loop_at: tuple[str, int] | None = None  # the training loop (from ``phases``): where divergence findings point
    published: set[tuple[Any, ...]] = field(default_factory=set)  # keys of findings already raised
    verdicts: list[dict[str, Any]] = field(default_factory=list)  # as last published (wire form)

    # ------------------------------------------------------------------ input
    def record_state(self, state: RankState, pid: int | None) -> bool:
        """Keep ``state`` as its rank's latest heartbeat; False when ignored (too many ranks, or an older report)."""
        if state.rank < 0:
            raise ValueError("'rank' must be >= 0")
        previous = self.states.get(state.rank)
        if previous is None and len(self.states) >= MAX_RANKS:
            return False
        if previous is not None and state.seen < previous.seen:
            return False  # an older report overtaken on another connection
        self.states[state.rank] = state
        if pid is not None:
            self.pids[state.rank] = pid
        return True

    def record_scalars(self, rank: int, step: int, values: Mapping[str, Any]) -> bool:
        """Keep the rank's train metrics of ``step`` (bounded); True when some series changed."""
        changed = False
        for metric in RANK_METRICS:
            value = _scalar(values.get(metric))
            per_rank = self.series.setdefault(metric, {})
            if value is None or (rank not in per_rank and len(per_rank) >= MAX_RANKS):
                continue
            steps = per_rank.setdefault(rank, {})
            steps[step] = value
            if len(steps) > MAX_RANK_STEPS:
                for old in sorted(steps)[COMPARE_STEPS : len(steps) - MAX_RANK_STEPS + COMPARE_STEPS]:
                    del steps[old]
            latest = self.latest_step.setdefault(metric, {})
            latest[rank] = max(step, latest.get(rank, step))
            changed = True
        return changed

    # ------------------------------------------------------------------ checks
    def check(
        self,
        now: float,
        hang_after: float,
        finished: Callable[[int], bool],
        location: tuple[str, int] | None,
    ) -> RankCheck:
        """Classify the ranks at ``now`` (epoch seconds; ``finished(rank)`` says its process has ended) and compare
        their series; new findings point at ``location`` (the training loop, else the script), or wait for one.

        ``changed`` says whether the verdicts differ from what the last check returned (so the caller announces them
        only then); the first check of ranks always counts.
        """
        check = RankCheck()
        if self.states:
            verdicts = classify_ranks(self.states, now, hang_after=hang_after)
            for rank in list(verdicts):
                if finished(rank):
                    verdicts[rank] = RankVerdict(rank, "finished", f"rank {rank} has finished")
            check.verdicts = [verdict_wire(v, self.states[r]) for r, v in sorted(verdicts.items())]
            for finding in hang_findings(verdicts, self.states):
                since = self.states[finding.rank].since if finding.rank is not None else None
                self._raise_once(check, ("hung", finding.rank, since), finding, "rank-hung")
        check.changed = check.verdicts != self.verdicts
        check.status = _verdict_kinds(check.verdicts) != _verdict_kinds(self.verdicts)
        self.verdicts = check.verdicts
        if location is None:
            return check  # nowhere to point a finding yet: compare once a hello or a phases event says where
        for metric in self.pending_metrics():
            series = self.comparable(metric)
            self.compared_through[metric] = min(self.latest_step[metric].values())
            found = diverging_rank(series, metric, file=location[0], line=location[1])
            if found is not None:
                key = ("diverging", metric, found.rank, found.details.get("reason"))
                self._raise_once(check, key, found, "rank-divergence")
        return check

    def pending_metrics(self) -> list[str]:
        """Metrics with a step that every rank has reported since the last comparison (only those can change it)."""
        pending = []
        for metric, latest in self.latest_step.items():
            if len(latest) < 2:
                continue
            complete = min(latest.values())
            if complete > self.compared_through.get(metric, -(1 << 62)):
                pending.append(metric)
        return pending

    def comparable(self, metric: str) -> dict[int, dict[int, float]]:
        """What ``diverging_rank`` needs of ``metric``: the first and last COMPARE_STEPS steps every rank reported,
        and every such step newer than the last comparison (so no first NaN in between is skipped)."""
        per_rank = self.series.get(metric, {})
        if len(per_rank) < 2:
            return {}
        common = sorted(set.intersection(*(set(steps) for steps in per_rank.values())))
        compared = self.compared_through.get(metric)
        chosen = {*common[:COMPARE_STEPS], *common[-COMPARE_STEPS:]}
        if compared is not None:
            chosen.update(s for s in common if s > compared)
        return {rank: {s: steps[s] for s in sorted(chosen)} for rank, steps in per_rank.items()}

    def _raise_once(self, check: RankCheck, key: tuple[Any, ...], finding: Finding, code: str) -> None:
        if key in self.published:
            return
        self.published.add(key)
        check.findings.append(replace(finding, details={**finding.details, "code": code}))  # a diagnostic code


def verdict_wire(verdict: RankVerdict, state: RankState) -> dict[str, Any]:
    """A rank's verdict as the training panel and status bar get it (``ranks`` run event, status details)."""
    wire: dict[str, Any] = {
        "rank": verdict.rank,
        "verdict": verdict.verdict,
        "message": verdict.message,
        "state": state.state,
        "since": state.since,
        "step": state.step,
    }
    if verdict.waiting_for:
        wire["waiting_for"] = list(verdict.waiting_for)
    if state.file is not None and state.line is not None:
        wire["file"], wire["line"] = state.file, state.line
    if state.blocked_in is not None:
        wire["blocked_in"] = state.blocked_in
    return wire


def _verdict_kinds(verdicts: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    return [(v["rank"], v["verdict"]) for v in verdicts]


def _scalar(value: Any) -> float | None:
    """A scalar value as a float: numbers, and the names non-finite numbers travel as in JSON; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if value in ("NaN", "Infinity", "-Infinity", "inf", "-inf", "nan"):
        return float(value)
    return None
