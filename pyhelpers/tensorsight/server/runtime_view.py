"""The last run as the editor shows it: agent events in, inlay hints / diagnostics / hovers / code lenses out.

Pure state with no I/O and no LSP types: ``server`` feeds it the events the hub accepted (``apply``) and asks it what
to show for a file; it converts to LSP itself. A new debug session replaces what the previous (ended) sessions left,
so the editor always shows one run. A tool's report (the doctor's findings, sent by the extension with
``tensorsight/toolFindings``) is a run too: it replaces that tool's earlier report and, when no debug session is live,
the findings of ended sessions; a new debug session drops the tools' reports. ``server`` merges all of a file's
findings into one problem per bug (``core.problems``). Events are read with the contract's ``parse_event`` (its
dataclasses say each key's type): a malformed one is rejected with a reason (the server logs it) and changes nothing.
The handlers are keyed by those dataclasses, so the types handled here are named only by the contract; they are
those ``core.protocol.EVENTS`` routes to the view (``HANDLED_EVENT_TYPES``; tests/core/test_protocol.py keeps the two
equal).

Distributed runs (torchrun, DDP): every rank of a session reports to the same hub. Each session's ``RankBook``
(``rank_book``) keeps the ranks' heartbeats and train series; ``check_ranks`` (the server calls it on its timer and
after rank events) has it classify the ranks and stores a diverging rank or a hang as a runtime finding, once each.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tensorsight.core import protocol
from tensorsight.core.findings import Finding
from tensorsight.core.l10n import mark, t
from tensorsight.core.phase_names import phase_label
from tensorsight.core.phases import PhaseTally
from tensorsight.core.ranks import RankState
from tensorsight.server.rank_book import HANG_AFTER_SECONDS, RankBook, RankCheck

PHASE_ORDER = ("data", "forward", "backward", "optimizer", "other")
MAX_FINDINGS_PER_FILE = 200
MAX_FILES = 256  # files with findings (and, apart, files with shapes) a run may name; more are ignored
MAX_SHAPES_PER_FILE = 2000
MAX_TEXT = 200


def normalize_path(path: str) -> str:
    """One spelling per file, so event paths and document paths meet (no filesystem access)."""
    return os.path.normcase(os.path.abspath(os.path.normpath(path)))


@dataclass
class ShapeSeen:
    """The last shape observed at one assignment line (per target name)."""

    file: str
    line: int
    name: str | None
    text: str
    dtype: str | None = None
    device: str | None = None
    step: int | None = None
    summary: str | None = None
    shape: list[int] | None = None
    count: int = 1
    texts: list[str] = field(default_factory=list)  # distinct texts seen, oldest first (at most 4)
    # per target of a line that assigns several (``for xb, yb in loader``): (name, text, dtype), for a hover on one
    values: list[tuple[str, str, str | None]] = field(default_factory=list)


@dataclass
class TimerSeen:
    """A ``tensorsight.Timer`` measured at one line: its last measurement and the run's total."""

    name: str
    last: float
    total: float
    calls: int = 1

    def text(self) -> str:
        mean = self.total / self.calls
        return t(
            "`{name}` last {last}, mean {mean} over {calls} call(s)",
            name=self.name,
            last=_milliseconds(self.last),
            mean=_milliseconds(mean),
            calls=self.calls,
        )


@dataclass
class PhaseBreakdown:
    """Seconds per phase of one training loop: the run's ``phases`` events in a ``PhaseTally`` (the first step apart,
    as the agent's summary and the panel count it), then the ``phase-summary`` once the run sends it (``final``)."""

    file: str | None
    line: int | None
    tally: PhaseTally = field(default_factory=PhaseTally)
    last_step: int | None = None
    summary: tuple[dict[str, float], int] | None = None

    @property
    def final(self) -> bool:
        return self.summary is not None

    def title(self) -> str:
        seconds, steps = self.summary if self.summary is not None else self.tally.breakdown()
        total = sum(seconds.values())
        if total <= 0 or steps <= 0:
            return t("TensorSight · training loop: no time measured yet")
        parts = [f"{phase_label(name)} {100.0 * seconds.get(name, 0.0) / total:.0f}%" for name in PHASE_ORDER]
        extra = sorted(set(seconds) - set(PHASE_ORDER))
        parts += [f"{name} {100.0 * seconds[name] / total:.0f}%" for name in extra]
        per_step = 1000.0 * total / steps
        where = t("{0} steps", steps) if self.final else t("step {0}", self.last_step) if self.last_step else ""
        suffix = f" ({where})" if where else ""
        return t("TensorSight · {phases} — {ms} ms/step", phases=" · ".join(parts), ms=f"{per_step:.1f}") + suffix


NO_RUN_TITLE = mark("TensorSight · training loop — run it with Debug Training to see where each step's time goes")
# while a live session runs the file and no step has been measured yet (the hello came, the first phases not)
WAITING_TITLE = mark("TensorSight · training loop — measuring… waiting for the first step")


@dataclass
class Update:
    """What one event changed, so the server refreshes only that."""

    error: str | None = None
    diagnostics: set[str] = field(default_factory=set)  # normalised paths whose runtime diagnostics changed
    hints: set[str] = field(default_factory=set)  # normalised paths whose inlay hints changed
    lenses: bool = False
    status: bool = False
    ranks: bool = False  # a rank's state or per-rank scalars changed: worth a ``check_ranks``


@dataclass
class SessionInfo:
    session_id: str
    active: bool = True
    processes: dict[int, dict[str, Any]] = field(default_factory=dict)  # pid -> {script, rank, finished}
    events: int = 0
    dropped: int = 0
    ranks: RankBook = field(default_factory=RankBook)


class RuntimeView:
    """All runtime state the editor features read; one instance per server."""

    def __init__(self, hang_after: float = HANG_AFTER_SECONDS) -> None:
        self.hang_after = hang_after
        self.sessions: dict[str, SessionInfo] = {}
        self._shapes: dict[str, dict[tuple[int, str | None], ShapeSeen]] = {}
        self._findings: dict[str, dict[tuple[Any, ...], Finding]] = {}
        self._reports: dict[str, dict[str, list[Finding]]] = {}  # tool -> path -> the findings of its last report
        self._nonfinite: dict[str, dict[int, protocol.NonfiniteEvent]] = {}
        self._phases: dict[tuple[str, int] | None, PhaseBreakdown] = {}
        self._timers: dict[str, dict[int, dict[str, TimerSeen]]] = {}  # path -> line -> timer name -> measurements
        self._scripts: set[str] = set()

    # ------------------------------------------------------------------ sessions
    def start_session(self, session_id: str) -> set[str]:
        """Register a session; when no other run is live, forget the last run. Returns the paths that lost data."""
        touched: set[str] = set()
        if not any(s.active for s in self.sessions.values()):
            touched = set(self._findings) | set(self._shapes) | self._reported_paths()
            self._shapes.clear()
            self._findings.clear()
            self._reports.clear()
            self._nonfinite.clear()
            self._phases.clear()
            self._timers.clear()
            self._scripts.clear()
            self.sessions = {k: v for k, v in self.sessions.items() if v.active}
        self.sessions[session_id] = SessionInfo(session_id)
        return touched

    def end_session(self, session_id: str) -> bool:
        info = self.sessions.get(session_id)
        if info is None or not info.active:
            return False
        info.active = False
        return True

    def active_sessions(self) -> list[SessionInfo]:
        return [s for s in self.sessions.values() if s.active]

    def record_report(self, tool: str, findings: Iterable[Finding]) -> set[str]:
        """A tool's report replaces its previous one (and, with no live session, the ended runs' findings). Returns
        the paths whose findings changed."""
        touched = set(self._reports.pop(tool, {}))
        if not self.active_sessions():
            touched |= set(self._findings)
            self._findings.clear()
            self._nonfinite.clear()
        per_path: dict[str, list[Finding]] = {}
        for finding in findings:
            path = normalize_path(finding.file)
            if path not in per_path and len(per_path) >= MAX_FILES:
                continue
            kept = per_path.setdefault(path, [])
            if len(kept) < MAX_FINDINGS_PER_FILE:
                kept.append(finding)
        self._reports[tool] = per_path
        return touched | set(per_path)

    def reported(self, path: str) -> list[tuple[str, Finding]]:
        """(tool, finding) of the tools' last reports for ``path``."""
        key = normalize_path(path)
        return [(tool, f) for tool, per_path in self._reports.items() for f in per_path.get(key, [])]

    def _reported_paths(self) -> set[str]:
        return {path for per_path in self._reports.values() for path in per_path}

    # ------------------------------------------------------------------ events
    def apply(self, session_id: str, event: Mapping[str, Any]) -> Update:
        """Take one event from the hub; never raises (a malformed event comes back as ``Update.error``).

        The dict is read with the contract's ``parse_event`` (the declared keys and their types); what a field must
        mean beyond its type (a line >= 1, a path) is checked by the handler. A type the view does not handle is
        counted and ignored."""
        info = self.sessions.get(session_id)
        if info is None:
            return Update(error=f"event for unknown session {session_id!r}")
        kind = event.get("type")
        if not isinstance(kind, str) or not kind:
            return Update(error="event without a type")
        known = protocol.EVENTS_BY_NAME.get(kind)
        handler = _HANDLERS.get(known.payload) if known is not None else None
        if handler is None:
            info.events += 1
            return Update()
        parsed = protocol.parse_event(event)
        if isinstance(parsed, protocol.ProtocolError):
            return Update(error=str(parsed))
        try:
            update = handler(self, info, parsed)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            return Update(error=f"malformed {kind} event: {exc}")
        if update.error is None:
            info.events += 1
        return update

    def _on_hello(self, info: SessionInfo, event: protocol.HelloEvent) -> Update:
        if event.pid is None:
            raise ValueError("'pid' must be an integer")
        info.processes[event.pid] = {"script": event.script, "rank": event.rank, "finished": False}
        if event.script:
            self._scripts.add(normalize_path(event.script))
        return Update(status=True, lenses=True)

    def _on_rank(self, info: SessionInfo, event: protocol.RankEvent) -> Update:
        """The agent learnt its rank after the hello (e.g. from torch.distributed): later events of that pid have it."""
        if event.pid is not None and event.pid in info.processes and event.rank >= 0:
            info.processes[event.pid]["rank"] = event.rank
        return Update(status=True)

    def _on_rank_state(self, info: SessionInfo, event: protocol.RankStateEvent) -> Update:
        state = RankState.from_event({**protocol.to_wire(event), "time": event.time})
        return Update(ranks=info.ranks.record_state(state, event.pid))

    def _on_scalars(self, info: SessionInfo, event: protocol.ScalarsEvent) -> Update:
        """Keep each rank's train loss / grad norm per step (bounded); anything else in scalars is the panel's."""
        rank = _rank_of(info, event)
        if rank is None or rank < 0:
            return Update()
        if (event.split or "train") != "train":
            return Update()  # validation loss is computed on the same data by every rank: nothing to compare
        return Update(ranks=info.ranks.record_scalars(rank, event.step, event.values))

    def _on_process_end(self, info: SessionInfo, event: protocol.ByeEvent | protocol.RunFinishedEvent) -> Update:
        if event.pid is not None and event.pid in info.processes:
            info.processes[event.pid]["finished"] = True
        if isinstance(event, protocol.ByeEvent) and event.dropped is not None:
            info.dropped = max(info.dropped, event.dropped)
        return Update(status=True, lenses=True)  # a lens waiting for this script's first step says so no more

    def _on_dropped(self, info: SessionInfo, event: protocol.DroppedEvent) -> Update:
        info.dropped += max(0, event.count)
        return Update(status=True)

    def _on_shape(self, info: SessionInfo, event: protocol.ShapeEvent) -> Update:
        path = normalize_path(_path(event.file))
        line = _line(event.line)
        text = event.text[:MAX_TEXT]
        name = event.name
        if path not in self._shapes and len(self._shapes) >= MAX_FILES:
            return Update()
        per_file = self._shapes.setdefault(path, {})
        key = (line, name)
        seen = per_file.get(key)
        if seen is None:
            if len(per_file) >= MAX_SHAPES_PER_FILE:
                return Update()
            seen = per_file[key] = ShapeSeen(path, line, name, text, texts=[text])
        else:
            seen.count += 1
            seen.text = text
            if text in seen.texts:
                seen.texts.remove(text)
            seen.texts = [*seen.texts, text][-4:]
        seen.dtype = _optional_str(event.dtype)
        seen.device = _optional_str(event.device)
        seen.step = event.step
        seen.summary = _optional_str(event.summary)
        seen.shape = list(event.shape) if event.shape is not None else None
        seen.values = [(v.name[:MAX_TEXT], v.text[:MAX_TEXT], _optional_str(v.dtype)) for v in (event.values or [])[:8]]
        return Update(hints={path})

    def _on_finding(self, info: SessionInfo, event: protocol.FindingEvent) -> Update:
        finding = Finding.from_dict(event.finding)
        if finding.line < 1:
            raise ValueError("finding line must be >= 1")
        return self._add_finding(finding)

    def _on_nonfinite(self, info: SessionInfo, event: protocol.NonfiniteEvent) -> Update:
        """Remember a birth's facts for the hover on its line. Its diagnostic is the agent's own ``finding`` event,
        relayed as it is: the view never writes a second text for the same NaN/Inf."""
        path = _path(event.file)
        line = _line(event.line)
        self._nonfinite.setdefault(normalize_path(path), {})[line] = event
        return Update()

    def _add_finding(self, finding: Finding) -> Update:
        path = normalize_path(finding.file)
        if path not in self._findings and len(self._findings) >= MAX_FILES:
            return Update()
        per_file = self._findings.setdefault(path, {})
        key: tuple[Any, ...] = (finding.kind, finding.line, finding.rank)
        if finding.kind != "nonfinite":
            key = (*key, finding.message)
        if key not in per_file:
            if len(per_file) >= MAX_FINDINGS_PER_FILE:
                return Update()
        elif finding.kind == "nonfinite" and per_file[key].step is not None:
            if finding.step is None or finding.step >= (per_file[key].step or 0):
                return Update()  # keep the first NaN/Inf origin: later ones merely propagate
        per_file[key] = finding
        return Update(diagnostics={path})

    def _on_phases(
        self, info: SessionInfo, event: protocol.PhasesEvent | protocol.PhaseSummaryEvent, final: bool = False
    ) -> Update:
        if not event.seconds:
            raise ValueError("'seconds' must be an object of phase -> seconds")
        clean = {k: _number(v, f"seconds.{k}") for k, v in event.seconds.items()}
        location: tuple[str, int] | None = None
        if event.file is not None:
            location = (normalize_path(_path(event.file)), _line(event.line))
            info.ranks.loop_at = (event.file, location[1])
        breakdown = self._phases.get(location)
        if breakdown is None:
            breakdown = PhaseBreakdown(location[0] if location else None, location[1] if location else None)
            self._phases[location] = breakdown
        if isinstance(event, protocol.PhaseSummaryEvent):
            breakdown.summary = (clean, max(1, event.steps))
        elif breakdown.final:
            return Update()
        else:
            breakdown.tally.add(event.step, clean)
            breakdown.last_step = event.step
        return Update(lenses=True)

    def _on_timer(self, info: SessionInfo, event: protocol.TimerEvent) -> Update:
        """A ``tensorsight.Timer`` measurement: kept for the hover at the timed line (the panel gets it forwarded)."""
        name = _path(event.name, "name")[:MAX_TEXT]
        seconds = _number(event.seconds, "seconds")
        if event.file is None:
            return Update()  # measured outside user code: only the panel shows it
        path, line = normalize_path(_path(event.file)), _line(event.line)
        per_file = self._timers.setdefault(path, {})
        per_line = per_file.get(line)
        if per_line is None:
            if len(per_file) >= MAX_SHAPES_PER_FILE:
                return Update()
            per_line = per_file[line] = {}
        seen = per_line.get(name)
        if seen is None:
            per_line[name] = TimerSeen(name, seconds, seconds)
        else:
            seen.last, seen.total, seen.calls = seconds, seen.total + seconds, seen.calls + 1
        return Update()

    # ------------------------------------------------------------------ queries
    def inlay_hints(self, path: str) -> list[ShapeSeen]:
        return sorted(self._shapes.get(normalize_path(path), {}).values(), key=lambda s: (s.line, s.name or ""))

    def diagnostics(self, path: str) -> list[Finding]:
        return sorted(self._findings.get(normalize_path(path), {}).values(), key=lambda f: (f.line, f.kind))

    def every_finding(self) -> list[Finding]:
        """The runs' and the tools' findings in every file (what may explain a symptom seen in another one)."""
        found = [f for per_file in self._findings.values() for f in per_file.values()]
        return found + [f for per_path in self._reports.values() for kept in per_path.values() for f in kept]

    def hover(self, path: str, line: int, word: str | None) -> str | None:
        """Markdown for a hover at (1-based) ``line``: the last observed tensor, and a NaN origin there."""
        key = normalize_path(path)
        parts: list[str] = []
        shapes = [s for s in self._shapes.get(key, {}).values() if s.line == line]
        if word:
            one_of = [
                replace(s, name=name, text=text, dtype=dtype, summary=None, texts=[])
                for s in shapes
                for name, text, dtype in s.values
                if name == word
            ]
            named = [s for s in shapes if s.name == word] or one_of
            shapes = named or ([s for s in shapes if s.name is None] if len(shapes) == 1 else [])
        for seen in shapes[:3]:
            label = f"`{seen.name}`" if seen.name else t("this line")
            where = t(" at step {0}", seen.step) if seen.step is not None else ""
            parts.append(t("**TensorSight** · last observed {0}{1}: `{2}`", label, where, seen.text))
            facts = [f for f in (seen.dtype, seen.device) if f]
            if facts:
                parts.append(" · ".join(facts))
            if seen.summary:
                parts.append(f"`{seen.summary}`")
            if len(seen.texts) > 1:
                parts.append(t("shapes seen here: {0}", ", ".join(f"`{text}`" for text in seen.texts)))
        for timer in list(self._timers.get(key, {}).get(line, {}).values())[:3]:
            parts.append(t("**TensorSight** · timer {0}", timer.text()))
        origin = self._nonfinite.get(key, {}).get(line)
        if origin is not None:
            step = origin.step
            parts.append(
                t("**TensorSight** · first NaN/Inf of the run produced here")
                + (t(" at step {0}", step) if step is not None else "")
                + (t(" by `{0}`", origin.op) if origin.op else "")
            )
        return "\n\n".join(parts) if parts else None

    def code_lenses(self, path: str, training_loops: Iterable[tuple[int, int]]) -> list[tuple[int, str]]:
        """(1-based line, title) above each training loop: its phase breakdown when a run measured it."""
        key = normalize_path(path)
        located = {loc[1]: b for loc, b in self._phases.items() if loc is not None and loc[0] == key}
        unlocated = self._phases.get(None) if key in self._scripts else None
        lenses: list[tuple[int, str]] = []
        used: set[int] = set()
        for first, last in training_loops:
            inside = [line for line in located if first <= line <= last]
            if inside:
                used.update(inside)
                lenses.append((first, located[inside[0]].title()))
            elif unlocated is not None:
                lenses.append((first, unlocated.title()))
            else:
                lenses.append((first, t(WAITING_TITLE if self._running(key) else NO_RUN_TITLE)))
        lenses.extend((line, b.title()) for line, b in located.items() if line not in used)
        return sorted(lenses)

    def _running(self, path: str) -> bool:
        """A live session has a process, not finished, that runs the script at (normalised) ``path``."""
        return any(
            isinstance(process.get("script"), str)
            and process["script"]
            and not process.get("finished")
            and normalize_path(process["script"]) == path
            for session in self.active_sessions()
            for process in session.processes.values()
        )

    def check_ranks(self, session_id: str, now: float) -> RankCheck:
        """Classify the session's ranks at ``now`` (epoch seconds) and look for a diverging rank or a hang; a new
        finding joins the runtime diagnostics like an agent's finding (see ``RankBook.check``)."""
        info = self.sessions.get(session_id)
        if info is None:
            return RankCheck()
        check = info.ranks.check(
            now, self.hang_after, lambda rank: self._rank_finished(info, rank), self._rank_finding_location(info)
        )
        for finding in check.findings:
            check.diagnostics |= self._add_finding(finding).diagnostics
        return check

    def _rank_finding_location(self, info: SessionInfo) -> tuple[str, int] | None:
        """Where a cross-rank finding points: the training loop a rank measured, else the top of the script."""
        if info.ranks.loop_at is not None:
            return info.ranks.loop_at
        for process in info.processes.values():
            if isinstance(process.get("script"), str) and process["script"]:
                return (process["script"], 1)
        return None

    def _rank_finished(self, info: SessionInfo, rank: int) -> bool:
        pid = info.ranks.pids.get(rank)
        return pid is not None and bool(info.processes.get(pid, {}).get("finished"))

    def status(self) -> dict[str, Any]:
        active = self.active_sessions()
        connected = [p for s in active for p in s.processes.values() if not p.get("finished")]
        state = "idle" if not active else "connected" if connected else "waiting"
        return {
            "sessions": len(active),
            "state": state,
            "details": [
                {
                    "sessionId": s.session_id,
                    "processes": len(s.processes),
                    "events": s.events,
                    "dropped": s.dropped,
                    "ranks": s.ranks.verdicts,
                }
                for s in active
            ],
        }


# the handler of each payload the view takes in, by the contract's dataclass (its ``TYPE`` is the wire name)
_HANDLERS: dict[type[protocol.AgentEvent], Callable[[RuntimeView, SessionInfo, Any], Update]] = {
    protocol.HelloEvent: RuntimeView._on_hello,
    protocol.ByeEvent: RuntimeView._on_process_end,
    protocol.RunFinishedEvent: RuntimeView._on_process_end,
    protocol.DroppedEvent: RuntimeView._on_dropped,
    protocol.RankEvent: RuntimeView._on_rank,
    protocol.RankStateEvent: RuntimeView._on_rank_state,
    protocol.ScalarsEvent: RuntimeView._on_scalars,
    protocol.ShapeEvent: RuntimeView._on_shape,
    protocol.FindingEvent: RuntimeView._on_finding,
    protocol.NonfiniteEvent: RuntimeView._on_nonfinite,
    protocol.PhasesEvent: RuntimeView._on_phases,
    protocol.PhaseSummaryEvent: RuntimeView._on_phases,
    protocol.TimerEvent: RuntimeView._on_timer,
}
# every type the contract routes to the view has its handler here (tests/core/test_protocol.py checks both ways)
HANDLED_EVENT_TYPES = frozenset(payload.TYPE for payload in _HANDLERS)


def _milliseconds(seconds: float) -> str:
    return f"{seconds * 1000.0:.1f} ms" if seconds < 10.0 else f"{seconds:.1f} s"


def _rank_of(info: SessionInfo, event: protocol.AgentEvent) -> int | None:
    """The event's rank, else the rank its process announced (hello or ``rank`` event)."""
    if event.rank is not None:
        return event.rank
    process = info.processes.get(event.pid) if event.pid is not None else None
    return _optional_int(process.get("rank")) if process else None


def _path(value: str | None, name: str = "file") -> str:
    """A path (or name) the event must carry: its type is the contract's, but it must not be empty either."""
    if not value:
        raise ValueError(f"'{name}' must be a non-empty string")
    return value


def _optional_str(value: Any) -> str | None:
    return value[:MAX_TEXT] if isinstance(value, str) and value else None


def _optional_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _line(value: int | None) -> int:
    if value is None:
        raise ValueError("'line' must be an integer")
    if value < 1:
        raise ValueError("'line' must be >= 1")
    return value


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"'{name}' must be a non-negative number")
    return float(value)
