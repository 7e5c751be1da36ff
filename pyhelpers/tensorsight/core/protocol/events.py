"""The contract's agent -> server half: the hub handshake and every event the agent sends, with where it goes.

The hub's limits and handshake (``HelloCredentials`` -> ``Welcome`` | ``Rejected``); every event type as a frozen
dataclass (``AgentEvent`` and its subclasses) and where the server takes it (``EVENTS``), the server's own run events
(``SERVER_EVENTS``, ``RUN_EVENTS``); ``parse_event`` reads a received dict back into its dataclass (or a
``ProtocolError``), ``wire_event`` writes one. Used by the agent (``agent/runtime/events``, ``hub_client`` and every
feature that sends an event) and the server (``hub``, ``runtime_view``, ``run_events``), through
``tensorsight.core.protocol``. Pure and stdlib only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from tensorsight.core.protocol.wire import (
    ProtocolError,
    _build,
    _Invalid,
    _optional,
    _own_annotations,
    parse_payload,
    to_wire,
)

# ---------------------------------------------------------------------------------------------- hub handshake
HUB_PROTOCOL = 1  # the hello's "protocol"
HUB_HOST = "127.0.0.1"  # the hub listens on loopback only
HELLO_TIMEOUT_SECONDS = 2.0  # a connection must say hello within this (an agent says it as soon as it connects)
MAX_HELLO_BYTES = 16 << 10  # a longer hello is rejected (what a peer without the token may make the hub hold)
MAX_ARGV_ITEM_CHARS = 256  # the agent cuts each of its hello's "argv" items to this, so a real hello always fits
MAX_LINE_BYTES = 1 << 20  # a longer line is rejected as malformed
MAX_TYPE_LENGTH = 64  # an event "type" longer than this is malformed
# What the server forwards to the editor (``tensorsight/runEvent``): an event whose JSON is longer than this is not
# forwarded (the server still reads it) but counted in the batch's server ``dropped`` event (``oversize``), and one
# notification carries at most this many bytes of events.
MAX_FORWARDED_EVENT_BYTES = 64 << 10
MAX_RUN_EVENT_BATCH_BYTES = 1 << 20
ORIGINS = ("debugger", "doctor")  # the hello's "origin": who installed the agent
HELLO = "hello"
DROPPED = "dropped"  # client -> hub: {"type": "dropped", "count"} after the bounded queue dropped events
BYE = "bye"  # client -> hub at exit: {"type": "bye", "dropped": total}
WELCOME = "welcome"  # hub -> client: {"type": "welcome", "sessionId"}
REJECTED = "rejected"  # hub -> client: {"type": "rejected", "reason"}, then the hub closes
COMMON_EVENT_KEYS = ("type", "pid", "time")  # every event; the bus adds "rank" under torch.distributed


# ---------------------------------------------------------------------------------------------- events
# Each event's payload is a frozen dataclass: the agent builds one and sends ``to_wire(event)``; the server reads a
# received dict back with ``parse_event`` (types checked, a clear error otherwise); the generator writes the same
# shapes as TypeScript interfaces and a ``parseRunEvent`` for the extension. Field types are what JSON carries: str,
# int, float (an int is accepted; NaN/Infinity arrive as floats here and as the strings "NaN", "Infinity",
# "-Infinity" in the editor), bool, None, list[...], dict[str, ...], ``Any`` and nested dataclasses. A field with a
# default of None is optional: absent on the wire when None; a required field typed ``X | None`` is sent always (the
# contract test holds the agent to it) but read as None when missing. Meanings beyond the type (a line >= 1, a
# non-empty path) are checked by the code that uses the field.


@dataclass(frozen=True, kw_only=True)
class AgentEvent:
    """What every event carries besides its data: ``pid`` and ``time`` (the bus adds them) and ``rank`` under
    torch.distributed. The subclass's ``TYPE`` is the wire ``type``."""

    TYPE: ClassVar[str] = ""
    pid: int | None = None
    time: float | None = None
    rank: int | None = None


@dataclass(frozen=True, kw_only=True)
class HelloEvent(AgentEvent):
    TYPE: ClassVar[str] = "hello"
    # the agent sends all four; the hub admits on the token alone, so a reader takes each as possibly missing
    protocol: int | None
    script: str | None
    argv: list[str] | None
    origin: str | None
    rank: int | None = None


@dataclass(frozen=True, kw_only=True)
class HelloCredentials:
    """What the hub reads of a hello line (``parse_payload``) to admit the connection: the session's ``token``, on
    which alone it admits. The rest of the line is the ``hello`` event (``HelloEvent``), delivered without the token
    and read by the server with ``parse_event`` like any other event."""

    token: str


@dataclass(frozen=True, kw_only=True)
class Welcome:
    """hub -> client: the connection is admitted."""

    TYPE: ClassVar[str] = WELCOME
    sessionId: str


@dataclass(frozen=True, kw_only=True)
class Rejected:
    """hub -> client: the connection is refused; the hub closes it."""

    TYPE: ClassVar[str] = REJECTED
    reason: str


HUB_ANSWERS: dict[str, type[Welcome] | type[Rejected]] = {WELCOME: Welcome, REJECTED: Rejected}


def hub_answer(answer: Welcome | Rejected) -> dict[str, Any]:
    """The hub's answer line: its ``type`` and fields."""
    return {"type": answer.TYPE, **{f.name: getattr(answer, f.name) for f in fields(answer)}}


def parse_hub_answer(message: Mapping[str, Any]) -> Welcome | Rejected | ProtocolError:
    """The hub's answer read back by the agent (a ``ProtocolError`` for anything else, an empty line included)."""
    kind = message.get("type") if isinstance(message, Mapping) else None
    known = HUB_ANSWERS.get(kind) if isinstance(kind, str) else None
    if known is None:
        return ProtocolError(None, f"not a hub answer (type {str(kind)[:MAX_TYPE_LENGTH]!r})")
    return parse_payload(known, message)


# the keys of each handshake line besides "type" (the hello's "rank" only when known)
HELLO_KEYS = (*(f.name for f in fields(HelloCredentials)), *(f.name for f in fields(HelloEvent) if f.name != "rank"))
WELCOME_KEYS = tuple(f.name for f in fields(Welcome))
REJECTED_KEYS = tuple(f.name for f in fields(Rejected))


@dataclass(frozen=True, kw_only=True)
class ByeEvent(AgentEvent):
    TYPE: ClassVar[str] = "bye"
    dropped: int | None  # sent always; a bye without it still ends the process (what the panel's run list follows)


@dataclass(frozen=True, kw_only=True)
class DroppedEvent(AgentEvent):
    """An agent's count of events its full queue dropped; the server's own marker (``origin`` "server") adds the
    events not forwarded for their size (``oversize``, over ``maxEventBytes``)."""

    TYPE: ClassVar[str] = "dropped"
    count: int
    origin: str | None = None
    oversize: int | None = None
    maxEventBytes: int | None = None


@dataclass(frozen=True, kw_only=True)
class FindingEvent(AgentEvent):
    """A Finding's wire dict (``core.findings``); ``origin`` "server" on a finding the server made (a rank)."""

    TYPE: ClassVar[str] = "finding"
    finding: dict[str, Any]
    origin: str | None = None


@dataclass(frozen=True, kw_only=True)
class NonfiniteEvent(AgentEvent):
    TYPE: ClassVar[str] = "nonfinite"
    file: str | None
    line: int | None
    op: str | None
    phase: str | None
    step: int | None
    # sent always; the readers (the hover, the panel's banner) make do without them
    nan: int | None
    posinf: int | None
    neginf: int | None
    message: str | None
    title: str | None
    module: str | None = None
    node: str | None = None


@dataclass(frozen=True, kw_only=True)
class ShapeValue:
    """One target of a line that assigns several (``for xb, yb in loader``)."""

    name: str
    text: str
    shape: list[int] | None = None
    dtype: str | None = None
    device: str | None = None


@dataclass(frozen=True, kw_only=True)
class ShapeEvent(AgentEvent):
    TYPE: ClassVar[str] = "shape"
    file: str
    line: int
    text: str
    shape: list[int] | None
    dtype: str | None
    device: str | None
    step: int | None
    name: str | None = None
    values: list[ShapeValue] | None = None
    summary: str | None = None


@dataclass(frozen=True, kw_only=True)
class ShapeMapEvent(AgentEvent):
    TYPE: ClassVar[str] = "shape-map"
    model: str
    rows: list[dict[str, Any]]  # core.shapes.ShapeRow.to_dict()
    file: str | None = None
    line: int | None = None


@dataclass(frozen=True, kw_only=True)
class ConditionErrorEvent(AgentEvent):
    TYPE: ClassVar[str] = "condition-error"
    expression: str
    message: str
    location: str


@dataclass(frozen=True, kw_only=True)
class RankEvent(AgentEvent):
    TYPE: ClassVar[str] = "rank"
    rank: int = field()  # required here (a bare ``int`` would inherit the base's default)
    local_rank: int | None
    world_size: int
    host: str | None  # sent always; informational
    source: str | None
    origin: str | None


@dataclass(frozen=True, kw_only=True)
class RankStateEvent(AgentEvent):
    TYPE: ClassVar[str] = "rank-state"
    rank: int = field()
    local_rank: int | None
    world_size: int
    state: str
    since: float
    heartbeat: float
    step: int | None
    file: str | None = None
    line: int | None = None
    blocked_in: str | None = None


@dataclass(frozen=True, kw_only=True)
class ScalarsEvent(AgentEvent):
    TYPE: ClassVar[str] = "scalars"
    step: int
    split: str | None  # "train" or "val"; sent always, read as "train" when missing
    # name -> number (NaN/Infinity included); a value of another type is ignored by the readers, not refused
    values: dict[str, Any]
    batches: int | None = None


@dataclass(frozen=True, kw_only=True)
class PhasesEvent(AgentEvent):
    TYPE: ClassVar[str] = "phases"
    step: int | None
    seconds: dict[str, float]
    eval_seconds: float | None = None
    file: str | None = None
    line: int | None = None


@dataclass(frozen=True, kw_only=True)
class PhaseSummaryEvent(AgentEvent):
    TYPE: ClassVar[str] = "phase-summary"
    steps: int
    seconds: dict[str, float]
    file: str | None = None
    line: int | None = None


@dataclass(frozen=True, kw_only=True)
class NonfiniteCounts:
    """NaN, +Inf and -Inf among a histogram's sampled values (sent always; a missing count reads as 0)."""

    nan: int | None
    posinf: int | None
    neginf: int | None


@dataclass(frozen=True, kw_only=True)
class HistogramEvent(AgentEvent):
    TYPE: ClassVar[str] = "histogram"
    step: int
    name: str
    kind: str  # "weight" or "grad"
    edges: list[float]
    counts: list[int]
    nonfinite: NonfiniteCounts | None  # sent always; read as no NaN/Inf when missing


@dataclass(frozen=True, kw_only=True)
class MemoryEvent(AgentEvent):
    TYPE: ClassVar[str] = "memory"
    step: int
    cpu_rss_bytes: int | None = None
    cuda_allocated: int | None = None
    cuda_reserved: int | None = None
    cuda_peak: int | None = None
    nvml_used: int | None = None
    nvml_total: int | None = None


@dataclass(frozen=True, kw_only=True)
class LogEvent(AgentEvent):
    TYPE: ClassVar[str] = "log"
    level: str
    message: str


@dataclass(frozen=True, kw_only=True)
class TensorboardEvent(AgentEvent):
    TYPE: ClassVar[str] = "tensorboard"
    logdir: str
    command: str


@dataclass(frozen=True, kw_only=True)
class TimerEvent(AgentEvent):
    TYPE: ClassVar[str] = "timer"
    name: str
    seconds: float
    file: str | None = None
    line: int | None = None


@dataclass(frozen=True, kw_only=True)
class RunFinishedEvent(AgentEvent):
    TYPE: ClassVar[str] = "run-finished"
    error: str | None  # the error text, or empty


@dataclass(frozen=True, kw_only=True)
class RanksEvent(AgentEvent):
    """The server's own: the ranks' verdicts (``RankVerdict``), when they change."""

    TYPE: ClassVar[str] = "ranks"
    verdicts: list[dict[str, Any]]


# How the server's batcher keeps an event when the editor falls behind (server/run_events.py): ``routine`` ones are
# dropped first, ``kept`` ones hold twice as long, ``lifecycle`` ones (what the panel's run list follows) three times.
ROUTINE, KEPT, LIFECYCLE = "routine", "kept", "lifecycle"


@dataclass(frozen=True)
class EventType:
    """One event type the agent sends the hub, and where the server takes it.

    ``payload`` is its dataclass (the keys, their types, which are optional). ``forwarded``: the server passes it on
    to the editor as a ``tensorsight/runEvent`` notification (the training panel, the status bar). ``view``:
    ``RuntimeView`` takes it in (turns it into inlay hints, diagnostics, hovers, code lenses or session state). Every
    type does at least one of the two.
    """

    payload: type[AgentEvent]
    source: str  # the module that sends it
    forwarded: bool
    view: bool
    doc: str
    priority: str = ROUTINE

    @property
    def name(self) -> str:
        return self.payload.TYPE

    @property
    def keys(self) -> tuple[str, ...]:
        """The data keys besides ``type``/``pid``/``time`` (and ``rank``, unless the payload declares it); a trailing
        ``?`` marks an optional one."""
        own = {f.name: f for f in fields(self.payload) if f.name in _own_annotations(self.payload)}
        return tuple(name + ("?" if _optional(f) else "") for name, f in own.items())


EVENTS: tuple[EventType, ...] = (
    EventType(
        HelloEvent,
        "agent/runtime/hub_client",
        True,
        True,
        "a process joined the session (the hub strips the token before anything else sees it)",
        LIFECYCLE,
    ),
    EventType(ByeEvent, "agent/runtime/hub_client", True, True, "the process exits", LIFECYCLE),
    EventType(DroppedEvent, "agent/runtime/hub_client", True, True, "events dropped on a full queue"),
    EventType(
        FindingEvent,
        "agent/runtime/events (emit_finding)",
        True,
        True,
        "a Finding's wire dict: a runtime diagnostic",
        KEPT,
    ),
    EventType(
        NonfiniteEvent,
        "agent/sentinel/records",
        True,
        True,
        "the first NaN/Inf of the run: a diagnostic and a hover at its line",
        KEPT,
    ),
    EventType(
        ShapeEvent,
        "agent/shapes/line_shapes",
        False,  # many per step: the editor gets them as inlay hints instead
        True,
        "the shape assigned at a line: an inlay hint and a hover",
    ),
    EventType(
        ShapeMapEvent,
        "agent/shapes/observers",
        True,
        False,
        "the model's shapes per module at its first forward (the doctor's shapeMap)",
    ),
    EventType(
        ConditionErrorEvent,
        "agent/conditions/predicates",
        True,
        False,
        "a tensorsight.* condition helper was misused (it answered False)",
        KEPT,
    ),
    EventType(RankEvent, "agent/distributed/ranks", True, True, "the process learnt its rank after the hello"),
    EventType(
        RankStateEvent,
        "agent/distributed/ranks",
        True,
        True,
        "a rank's heartbeat (running, stopped, waiting in a collective)",
        KEPT,
    ),
    EventType(
        ScalarsEvent,
        "agent/measurement/pipeline",
        True,
        True,
        "loss, lr, gradient norms (train) or the validation loss (val) of a step",
    ),
    EventType(
        PhasesEvent,
        "agent/measurement/pipeline",
        True,
        True,
        "seconds per phase of one step: the code lens above the training loop",
    ),
    EventType(
        PhaseSummaryEvent,
        "agent/measurement/pipeline",
        True,
        True,
        "seconds per phase over the whole run",
    ),
    EventType(
        HistogramEvent,
        "agent/measurement/pipeline",
        True,
        False,
        "a weight or gradient histogram of the finite values, and the NaN/+Inf/-Inf counts of the sample "
        "(``nonfinite``: {nan, posinf, neginf}; no buckets when no value is finite)",
    ),
    EventType(MemoryEvent, "agent/measurement/pipeline", True, False, "memory figures of a step (bytes)"),
    EventType(LogEvent, "agent/measurement/training_log", True, False, "a training log line"),
    EventType(
        TensorboardEvent,
        "agent/measurement/tensorboard_writer",
        True,
        False,
        "TensorBoard event files are being written",
        KEPT,
    ),
    EventType(
        TimerEvent,
        "agent/measurement/timer",
        True,
        True,
        "one measurement of a tensorsight.Timer: the panel's timers and a hover at the timed line",
    ),
    EventType(
        RunFinishedEvent,
        "cli/doctor",
        True,
        True,
        "the doctored script ended (error text, or empty)",
        LIFECYCLE,
    ),
)
EVENTS_BY_NAME: dict[str, EventType] = {e.name: e for e in EVENTS}
EVENT_TYPES = frozenset(EVENTS_BY_NAME)
FORWARDED_EVENT_TYPES = frozenset(e.name for e in EVENTS if e.forwarded)
VIEW_EVENT_TYPES = frozenset(e.name for e in EVENTS if e.view)

# run events the server makes itself (distributed runs, the batcher's marker): sent as tensorsight/runEvent, never
# received from an agent
SERVER_EVENTS: tuple[EventType, ...] = (
    EventType(RanksEvent, "server", True, False, "the ranks' verdicts, when they change", KEPT),
    EventType(FindingEvent, "server", True, False, 'a diverging or hung rank (origin "server")', KEPT),
    EventType(DroppedEvent, "server/run_events", True, False, 'events the editor did not get (origin "server")'),
)
# every type that reaches the editor as a run event, with its payload: what protocol.ts's RunEvent union is made of
RUN_EVENTS: dict[str, EventType] = {
    **{e.name: e for e in SERVER_EVENTS},
    **{e.name: e for e in EVENTS if e.forwarded},
}
RUN_EVENT_TYPES = frozenset(RUN_EVENTS)


def event_priority(event_type: object) -> str:
    """How the batcher keeps an event of this type (``ROUTINE`` for a type the contract does not know)."""
    known = RUN_EVENTS.get(event_type) if isinstance(event_type, str) else None
    return known.priority if known is not None else ROUTINE


def required_keys(event_type: str) -> tuple[str, ...]:
    return tuple(k for k in EVENTS_BY_NAME[event_type].keys if not k.endswith("?"))


def all_keys(event_type: str) -> tuple[str, ...]:
    return tuple(k.rstrip("?") for k in EVENTS_BY_NAME[event_type].keys)


def wire_event(event: AgentEvent) -> dict[str, Any]:
    """The whole message for ``event``: its ``type`` and ``to_wire``'s data (what the server sends the editor)."""
    return {"type": event.TYPE, **to_wire(event)}


def parse_event(
    message: Mapping[str, Any], registry: Mapping[str, EventType] | None = None
) -> AgentEvent | ProtocolError:
    """The typed event a received dict stands for, or a ``ProtocolError`` saying what is wrong with it.

    Keys the payload does not declare are ignored (a newer agent may send more); a missing required key, a value of
    the wrong type or an unknown ``type`` is an error. ``registry`` defaults to the agents' events (``EVENTS``)."""
    kind = message.get("type")
    if not isinstance(kind, str) or not kind:
        return ProtocolError(None, "event without a type")
    known = (EVENTS_BY_NAME if registry is None else registry).get(kind)
    if known is None:
        return ProtocolError(kind, f"unknown event type {kind[:MAX_TYPE_LENGTH]!r}")
    try:
        return _build(known.payload, message, "")
    except _Invalid as exc:
        return ProtocolError(kind, str(exc))
