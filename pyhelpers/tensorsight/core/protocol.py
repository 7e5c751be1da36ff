"""The messages that cross between TensorSight's processes, defined once.

Three processes talk (see the design's diagram): the editor starts the language server and the debuggee; the agent in
the debuggee reports to the server's runtime hub. Everything they say to each other is declared here:
- the environment the editor (or the doctor) hands to the debuggee, and the launch options inside
  ``TENSORSIGHT_OPTIONS`` with their types and defaults (``LAUNCH_OPTIONS``);
- the hub handshake (``hello`` -> ``welcome`` | ``rejected``) and its limits;
- every event type the agent emits as a frozen dataclass (its fields and their types), and where it goes on the
  server (``EVENTS``); the server's own run events (``SERVER_EVENTS``); ``parse_event`` reads a received dict back
  into its dataclass (or a ``ProtocolError``), ``to_wire``/``wire_event`` write one;
- the custom LSP requests and notifications between the extension and the server, with their params and answers
  (``REQUESTS``, ``NOTIFICATIONS``, ``INTERFACES``).

Who imports it: the agent (``agent/runtime/events`` and every feature that sends an event, ``options``,
``hub_client``), the server (``server``, ``hub``, ``runtime_view``, ``run_events``) and the doctor. The TypeScript
side cannot import Python, so ``extension/src/server/protocol.ts`` (with an interface per run event and a
``parseRunEvent`` that applies the same rules as ``parse_event``) is generated from this module by
``scripts/generate_protocol_ts.py``; ``tests/core/test_protocol.py`` checks that the file is current, that every
event the agent's source sends is declared and built from its dataclass, that samples of each parse on both sides,
that the server forwards and handles what is declared, and that no other module keeps a list of event names.
Pure and stdlib only (the agent imports it inside the user's process).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from types import UnionType
from typing import Any, ClassVar, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

# ---------------------------------------------------------------------------------------------- phase verdicts
# The contract owns these two numbers (the agent's verdicts in core.phases, the launch option's default and the
# training panel all read them here); core.phases re-exports them.
# A phase "dominates" when it takes more than this share of the step (the verdict: data > 50%).
DATA_DOMINANT_SHARE = 0.5
# Below this many measured steps a share is noise (first-batch worker start-up, lazy initialisation).
MIN_STEPS_FOR_VERDICT = 3

# ---------------------------------------------------------------------------------------------- environment
ENV_HUB = "TENSORSIGHT_HUB"  # "127.0.0.1:PORT" of the session's hub listener (startSession's answer)
ENV_TOKEN = "TENSORSIGHT_TOKEN"  # the session's secret, sent in the hello
ENV_OPTIONS = "TENSORSIGHT_OPTIONS"  # JSON object of launch options (LAUNCH_OPTIONS)
ENV_SESSION = "TENSORSIGHT_SESSION"  # the editor's session id (set by the extension; informational for the agent)
# the editor's display language (vscode.env.language, e.g. "es"): the words the agent, the CLI tools and the server
# write (core/l10n); the extension sets it for the debuggee, the tools and the server (which prefers the LSP
# initialize request's locale)
ENV_LOCALE = "TENSORSIGHT_LOCALE"
# torchrun's contract, read by the agent to know its rank without importing torch
ENV_RANK = "RANK"
ENV_WORLD_SIZE = "WORLD_SIZE"
ENV_LOCAL_RANK = "LOCAL_RANK"
# the language server's own environment
# os.pathsep-separated folders put first on sys.path by ``python -m tensorsight.server`` started by hand; the extension
# names its bundled libraries to the isolated bootstrap instead (``--path``, see tensorsight/launch.py)
ENV_BUNDLED_LIBS = "TENSORSIGHT_BUNDLED_LIBS"
ENV_LOG_LEVEL = "TENSORSIGHT_LOG_LEVEL"  # the server's stderr logging level, e.g. "INFO"

AGENT_ENVIRONMENT = (ENV_HUB, ENV_TOKEN, ENV_OPTIONS, ENV_SESSION, ENV_LOCALE)
LAUNCHER_ENVIRONMENT = (ENV_RANK, ENV_WORLD_SIZE, ENV_LOCAL_RANK)
SERVER_ENVIRONMENT = (ENV_BUNDLED_LIBS, ENV_LOG_LEVEL, ENV_LOCALE)


# ---------------------------------------------------------------------------------------------- launch options
@dataclass(frozen=True)
class LaunchOption:
    """One key of ``TENSORSIGHT_OPTIONS`` (camelCase; the doctor's ``--set KEY=VALUE`` takes the same keys).

    ``kind`` says what the reading feature accepts: ``bool``; ``count`` (a number of steps, 0 = off);
    ``positive`` (a number > 0); ``share`` (between 0 and 1, exclusive); ``path``; ``level`` (a logging level name);
    ``ranks`` (a rank number or a list of them). A wrong value is reported once and the default is used.
    """

    name: str
    kind: str
    default: Any
    feature: str  # the module that reads it
    doc: str


LAUNCH_OPTIONS: tuple[LaunchOption, ...] = (
    LaunchOption(
        "breakOnNonFinite",
        "bool",
        False,
        "agent/sentinel",
        "stop in the user's frame at the first NaN/Inf a tensor op produces (the doctor records it instead)",
    ),
    LaunchOption("observeShapes", "bool", True, "agent/shapes/observers", "record shapes at assignment lines"),
    LaunchOption("observeShapesEvery", "positive", 500, "agent/shapes/observers", "steps between observation windows"),
    LaunchOption("checkLeakage", "bool", True, "agent/leakage/watch", "look for labels leaking into the features"),
    LaunchOption(
        "leakageBudgetSeconds", "positive", 5.0, "agent/leakage/watch", "seconds the leakage checks may spend per run"
    ),
    LaunchOption("measure", "bool", True, "agent/measurement/pipeline", "master switch of the measurement"),
    LaunchOption("phases", "bool", True, "agent/measurement/pipeline", "time data/forward/backward/optimizer/other"),
    LaunchOption("scalarsEvery", "count", 1, "agent/measurement/pipeline", "loss, lr, grad norms every N steps"),
    LaunchOption(
        "gradNormsPerParameter", "bool", True, "agent/measurement/pipeline", "one gradient norm per parameter too"
    ),
    LaunchOption("histogramEvery", "count", 100, "agent/measurement/pipeline", "weight/grad histograms every N steps"),
    LaunchOption("memory", "bool", True, "agent/measurement/pipeline", "process and CUDA memory per step"),
    LaunchOption("traceMemory", "bool", False, "agent/measurement/pipeline", "start tracemalloc at launch"),
    LaunchOption("logFile", "path", None, "agent/measurement/pipeline", "write a training log to this file"),
    LaunchOption("logLevel", "level", "INFO", "agent/measurement/pipeline", "the training log's level"),
    LaunchOption("tensorboardDir", "path", None, "agent/measurement/pipeline", "write TensorBoard event files here"),
    LaunchOption("diagnoseCurves", "bool", True, "agent/measurement/pipeline", "dynamics findings from the curves"),
    LaunchOption(
        "dataShareThreshold",
        "share",
        DATA_DOMINANT_SHARE,
        "agent/measurement/pipeline",
        "data loading above this share of a step is a performance finding",
    ),
    LaunchOption(
        "ranks",
        "ranks",
        None,
        "agent/distributed/ranks",
        "the ranks that may stop (breakpoints, sentinel); all if unset",
    ),
    LaunchOption("rankHeartbeat", "positive", 5.0, "agent/distributed/ranks", "seconds between rank-state reports"),
    LaunchOption(
        "rankWaitAfter", "positive", 2.0, "agent/distributed/ranks", "seconds in a collective before a rank is waiting"
    ),
)
OPTIONS_BY_NAME: dict[str, LaunchOption] = {o.name: o for o in LAUNCH_OPTIONS}

# The debugpy launch fields a "Debug Training" configuration gets when it leaves them out
# (extension/src/debug/launchConfig.ts; the ``tensorsight.justMyCode`` setting's default is the same). With
# ``justMyCode`` debugpy treats the standard library and site-packages (torch) as library code: Step Into on
# ``model(x)`` lands in the model's ``forward``, not in ``torch/nn/modules/module.py``. TensorSight's own frames are
# hidden either way (``agent.debugger.pause``).
DEBUG_TRAINING_DEFAULTS: dict[str, Any] = {"justMyCode": True, "console": "internalConsole"}

# The editor's ``tensorsight.*`` settings and their defaults: package.json declares each with this default (checked by
# tests/extension_contract/test_setting_defaults.py) and extension/src/common/settings.ts reads it from the generated
# protocol.ts. They are the editor's choices, not the agent's: "Debug Training" stops at the first NaN/Inf
# (``breakOnNonFinite`` here, passed to the agent in every launch), while the agent on its own, without an editor that
# asks, does not (``LAUNCH_OPTIONS``' default; the doctor records instead of stopping).
SETTING_DEFAULTS: dict[str, Any] = {
    "python": "",
    "breakOnNonFinite": True,
    "justMyCode": DEBUG_TRAINING_DEFAULTS["justMyCode"],
    "injectIntoPythonDebugger": True,
    "server.enabled": True,
    "statusBar.gpu": True,
    "tensorboard.logDir": "runs",
    "tensorboard.logRuns": False,
    "doctor.timeout": 600,
    "trace.server": "off",
}


def option_default(name: str) -> Any:
    """The declared default of launch option ``name`` (KeyError for an undeclared one: a typo fails loudly)."""
    return OPTIONS_BY_NAME[name].default


# A run's phase breakdown leaves its first step out once this many later steps are measured (core.phases.PhaseTally;
# the training panel applies the same rule to the ``phases`` events it receives).
PHASE_STEPS_WITHOUT_THE_FIRST = MIN_STEPS_FOR_VERDICT

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


def to_wire(event: AgentEvent) -> dict[str, Any]:
    """The data of ``event`` as the bus sends it (``type``/``pid``/``time`` are added there): nested dataclasses as
    dicts, and an optional field left out when it is None (and so is ``rank``, ``pid``, ``time`` when unset)."""
    data: dict[str, Any] = {}
    for f in fields(event):
        value = getattr(event, f.name)
        if value is None and _optional(f):
            continue
        data[f.name] = _wire_value(value)
    return data


def wire_event(event: AgentEvent) -> dict[str, Any]:
    """The whole message for ``event``: its ``type`` and ``to_wire``'s data (what the server sends the editor)."""
    return {"type": event.TYPE, **to_wire(event)}


def _wire_value(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _wire_value(getattr(value, f.name))
            for f in fields(value)
            if getattr(value, f.name) is not None or not _optional(f)
        }
    if isinstance(value, list):
        return [_wire_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _wire_value(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class ProtocolError:
    """Why a received dict is not a valid event: the event's type (when it had one) and the first problem found."""

    event_type: str | None
    reason: str

    def __str__(self) -> str:
        return f"malformed {self.event_type} event: {self.reason}" if self.event_type else self.reason


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


_Payload = TypeVar("_Payload")


def parse_payload(cls: type[_Payload], message: Mapping[str, Any]) -> _Payload | ProtocolError:
    """A request's params (or any payload dataclass of this module) read from a received dict, or why not: the same
    rules as ``parse_event``."""
    if not isinstance(message, Mapping):
        return ProtocolError(None, f"{cls.__name__} must be an object")
    try:
        built: _Payload = _build(cls, message, "")
        return built
    except _Invalid as exc:
        return ProtocolError(None, str(exc))


class _Invalid(Exception):
    pass


def _build(cls: type[Any], message: Mapping[str, Any], where: str) -> Any:
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in fields(cls):
        name = f"{where}{f.name}"
        if f.name not in message or (message[f.name] is None and _optional(f)):
            if not _optional(f):
                if not admits_none(hints[f.name]):
                    raise _Invalid(f"'{name}' is missing")
                values[f.name] = None
            continue
        if f.name in getattr(cls, "DROPS_MALFORMED", ()) and isinstance(message[f.name], list):
            values[f.name] = _well_formed(message[f.name], hints[f.name], name)
            continue
        values[f.name] = _value(message[f.name], hints[f.name], name)
    return cls(**values)


def _well_formed(items: list[Any], annotation: Any, name: str) -> list[Any]:
    """The items of a ``DROPS_MALFORMED`` list field that fit its item type; the others are left out."""
    (item,) = get_args(_strip_none(annotation) if admits_none(annotation) else annotation)
    kept = []
    for index, value in enumerate(items):
        try:
            kept.append(_value(value, item, f"{name}[{index}]"))
        except _Invalid:
            continue
    return kept


def _value(value: Any, annotation: Any, name: str) -> Any:
    if annotation is Any:
        return value
    origin = get_origin(annotation)
    if origin is Union or origin is UnionType:
        options = get_args(annotation)
        for option in options:
            try:
                return _value(value, option, name)
            except _Invalid:
                continue
        others = [option for option in options if option is not type(None)]
        compound = len(others) == 1 and (get_origin(others[0]) is not None or is_dataclass(others[0]))
        if compound and value is not None:
            _value(value, others[0], name)  # ``list[X] | None`` given a list: say which item is wrong
        raise _Invalid(f"'{name}' must be {_type_text(annotation)}")
    if annotation is type(None):
        if value is None:
            return None
    elif annotation is bool:
        if isinstance(value, bool):
            return value
    elif annotation is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif annotation is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
    elif annotation is str:
        if isinstance(value, str):
            return value
    elif origin is list:
        if isinstance(value, list):
            (item,) = get_args(annotation)
            return [_value(v, item, f"{name}[{i}]") for i, v in enumerate(value)]
    elif origin is dict:
        if isinstance(value, Mapping):
            _key, item = get_args(annotation)
            return {str(k): _value(v, item, f"{name}.{k}") for k, v in value.items()}
    elif origin is Literal:
        if value in get_args(annotation):
            return value
    elif isinstance(annotation, type) and is_dataclass(annotation):
        if isinstance(value, Mapping):
            return _build(annotation, value, f"{name}.")
    raise _Invalid(f"'{name}' must be {_type_text(annotation)}")


def _type_text(annotation: Any) -> str:
    """A type as an error message names it: ``an integer or null``."""
    origin = get_origin(annotation)
    if origin is Union or origin is UnionType:
        return " or ".join(_type_text(a) for a in get_args(annotation))
    if origin is Literal:
        return "one of " + ", ".join(repr(value) for value in get_args(annotation))
    words = {type(None): "null", bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    if annotation in words:
        return words[annotation]
    if origin is list:
        return "a list"
    return "an object"


def admits_none(annotation: Any) -> bool:
    """A field typed ``X | None``: the reader takes a missing key as None (the sender must still send it)."""
    return get_origin(annotation) in (Union, UnionType) and type(None) in get_args(annotation)


def _optional(f: Any) -> bool:
    return f.default is None


def _own_annotations(cls: type[Any]) -> set[str]:
    return {k for k in inspect.get_annotations(cls) if k != "TYPE"}


_HINTS: dict[type[Any], dict[str, Any]] = {}


def _hints(cls: type[Any]) -> dict[str, Any]:
    """The evaluated field types of a payload (the module's annotations are strings), computed once per class."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = get_type_hints(cls)
    return hints


def payload_fields(cls: type[Any]) -> list[tuple[str, Any, bool]]:
    """(name, evaluated type, optional) of each field of a payload, base fields first: what the generator writes."""
    hints = _hints(cls)
    return [(f.name, hints[f.name], _optional(f)) for f in fields(cls)]


# ---------------------------------------------------------------------------------------------- LSP custom methods
START_SESSION = "tensorsight/startSession"
END_SESSION = "tensorsight/endSession"
VALIDATE_CONDITION = "tensorsight/validateCondition"
SUGGEST_CONDITIONS = "tensorsight/suggestConditions"
TOOL_FINDINGS = "tensorsight/toolFindings"
RUN_EVENT = "tensorsight/runEvent"
GPU = "tensorsight/gpu"
STATUS = "tensorsight/status"


# The payloads of the custom requests and notifications, each a frozen dataclass like the events: the server reads a
# request's params with ``parse_payload`` and the generator writes each as a TypeScript interface (``INTERFACES``,
# derived from these). A field's ``doc`` (its ``field`` metadata) and the class's ``DOC`` become the interface's
# comments; a field with a default of None is optional (``name?: T``), one typed ``X | None`` without a default is
# ``X | null``.


@dataclass(frozen=True, kw_only=True)
class StartSessionParams:
    sessionId: str


@dataclass(frozen=True, kw_only=True)
class StartSessionResult:
    DOC: ClassVar[str] = "The same answer when the session was already started."
    address: str = field(metadata={"doc": f"'127.0.0.1:PORT': pass it to the debuggee as {ENV_HUB}"})
    token: str = field(metadata={"doc": f"pass it to the debuggee as {ENV_TOKEN}"})


@dataclass(frozen=True, kw_only=True)
class EndSessionParams:
    sessionId: str


@dataclass(frozen=True, kw_only=True)
class EndSessionResult:
    ended: bool


@dataclass(frozen=True, kw_only=True)
class ValidateConditionParams:
    uri: str
    line: int = field(metadata={"doc": "0-based"})
    condition: str


@dataclass(frozen=True, kw_only=True)
class ValidateConditionResult:
    undefinedNames: list[str] = field(
        metadata={"doc": "names (and unknown tensorsight helpers) not defined at the line"}
    )
    message: str = field(metadata={"doc": "one sentence for a warning; empty when the condition is fine"})
    syntaxError: str | None = field(metadata={"doc": "why the condition is not a Python expression"})
    sideEffects: list[str] = field(
        metadata={
            "doc": "what in the condition may change the program when it runs (in-place methods, out=, :=, I/O, "
            "calls not known to be harmless); the message warns about them"
        }
    )
    available: bool = field(metadata={"doc": "the server could check the condition"})


@dataclass(frozen=True, kw_only=True)
class SuggestConditionsParams:
    name: str
    uri: str | None = None
    line: int | None = field(
        default=None, metadata={"doc": "0-based; with uri, the shape a run observed there sharpens the offer"}
    )
    kindHint: str | None = None
    shape: list[int] | None = None


@dataclass(frozen=True, kw_only=True)
class ReportedFinding:
    DOC: ClassVar[str] = "A finding in the shared model (a tool's --json report carries these)."
    kind: str
    severity: Literal["error", "warning", "info"]
    message: str
    file: str
    line: int = field(metadata={"doc": "1-based"})
    step: int | None = None
    rank: int | None = None
    details: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class ToolFindingsParams:
    DOC: ClassVar[str] = (
        "A tool's report for Problems: the server merges it with the rules and the runs (one problem per bug)."
    )
    DROPS_MALFORMED: ClassVar[tuple[str, ...]] = ("findings",)  # a malformed finding is left out, not the report
    tool: str = field(metadata={"doc": "'doctor', 'profile', 'shapes' or 'overfit': its earlier report is replaced"})
    findings: list[ReportedFinding] = field(metadata={"doc": "a malformed one is dropped (not counted as accepted)"})


@dataclass(frozen=True, kw_only=True)
class ToolFindingsResult:
    accepted: int = field(metadata={"doc": "findings kept (malformed ones are dropped)"})


@dataclass(frozen=True, kw_only=True)
class ConditionSuggestion:
    label: str
    condition: str
    description: str


@dataclass(frozen=True, kw_only=True)
class RunEvent:
    DOC: ClassVar[str] = (
        "An agent event as the agent sent it (non-finite numbers arrive as 'NaN', 'Infinity', '-Infinity')."
    )
    OPEN_ENDED: ClassVar[bool] = True  # more keys come (``[key: string]: unknown``): the event's own
    type: str = field(metadata={"doc": "one of RUN_EVENT_TYPES; a newer agent may send others (ignore them)"})
    pid: int | None = field(default=None, metadata={"doc": "absent on the events the server makes itself"})
    time: float | None = None
    rank: int | None = None
    step: int | None = None


@dataclass(frozen=True, kw_only=True)
class RunEventParams:
    DOC: ClassVar[str] = "One run event, as the rest of the extension receives them (the notification carries a batch)."
    sessionId: str
    event: RunEvent


@dataclass(frozen=True, kw_only=True)
class RunEventBatch:
    DOC: ClassVar[str] = (
        "A session's run events in one notification: at most 4 a second per session, 500 events and 1 MiB each; an "
        "event over 64 KiB is not forwarded but counted (a server `dropped` event with `oversize`)."
    )
    sessionId: str
    events: list[RunEvent]


@dataclass(frozen=True, kw_only=True)
class GpuInfo:
    index: int
    name: str
    utilization: float | None = field(metadata={"doc": "percent"})
    memoryUsed: int | None = field(metadata={"doc": "bytes"})
    memoryTotal: int | None = field(metadata={"doc": "bytes"})
    processMemoryUsed: int | None = field(default=None, metadata={"doc": "bytes used by the debugged processes"})


@dataclass(frozen=True, kw_only=True)
class GpuParams:
    available: bool
    gpus: list[GpuInfo]
    message: str | None = None


@dataclass(frozen=True, kw_only=True)
class RankVerdict:
    rank: int
    verdict: str = field(metadata={"doc": "running, stopped, waiting, hung, silent or finished"})
    message: str
    state: str
    since: float
    step: int | None
    waiting_for: list[int] | None = None
    file: str | None = None
    line: int | None = None
    blocked_in: str | None = None


@dataclass(frozen=True, kw_only=True)
class StatusDetail:
    sessionId: str
    address: str | None = None
    processes: int
    connections: int | None = None
    events: int
    dropped: int
    rejectedConnections: int | None = None
    malformedEvents: int | None = None
    ranks: list[RankVerdict]


@dataclass(frozen=True, kw_only=True)
class StatusParams:
    sessions: int = field(metadata={"doc": "live sessions"})
    state: Literal["idle", "waiting", "connected"]
    details: list[StatusDetail]


@dataclass(frozen=True)
class Field:
    """One field of a payload, typed as TypeScript writes it (the generated ``protocol.ts`` uses it verbatim)."""

    name: str
    ts_type: str
    optional: bool = False
    doc: str = ""


@dataclass(frozen=True)
class Interface:
    """A payload as the generator writes it: derived from its dataclass (``interface_of``)."""

    name: str
    fields: tuple[Field, ...]
    doc: str = ""
    open_ended: bool = False  # more keys may come (``[key: string]: unknown``)
    payload: type[Any] | None = None


def interface_of(cls: type[Any]) -> Interface:
    """The TypeScript view of a payload dataclass: each field's type as TypeScript writes it, its doc, optional."""
    hints = _hints(cls)
    out = []
    for f in fields(cls):
        annotation = hints[f.name]
        optional = _optional(f)
        if optional:
            annotation = _strip_none(annotation)
        out.append(Field(f.name, ts_type(annotation), optional, f.metadata.get("doc", "")))
    return Interface(
        cls.__name__, tuple(out), getattr(cls, "DOC", ""), bool(getattr(cls, "OPEN_ENDED", False)), payload=cls
    )


def _strip_none(annotation: Any) -> Any:
    rest = tuple(a for a in get_args(annotation) if a is not type(None))
    return rest[0] if len(rest) == 1 else Union[rest]  # noqa: UP007 - built from a tuple


def ts_type(annotation: Any, number: str = "number") -> str:
    """A field type as TypeScript writes it (``number`` for int and float unless ``number`` says otherwise)."""
    origin = get_origin(annotation)
    if origin is Union or origin is UnionType:
        return " | ".join(ts_type(a, number) for a in get_args(annotation))
    if origin is Literal:
        return " | ".join(f"'{value}'" for value in get_args(annotation))
    if origin is list:
        inner = ts_type(get_args(annotation)[0], number)
        return f"({inner})[]" if " | " in inner else f"{inner}[]"
    if origin is dict:
        return f"Record<string, {ts_type(get_args(annotation)[1], number)}>"
    if isinstance(annotation, type) and is_dataclass(annotation):
        return annotation.__name__
    scalars = {str: "string", int: "number", float: number, bool: "boolean", type(None): "null", Any: "unknown"}
    return scalars[annotation]


@dataclass(frozen=True)
class Request:
    """Client -> server; ``result`` names an interface, with ``[]`` when the answer is a list of them."""

    method: str
    key: str  # the ``Methods`` key on the TypeScript side
    params: str
    result: str


@dataclass(frozen=True)
class Notification:
    """Server -> client."""

    method: str
    key: str
    params: str


PAYLOADS: tuple[type[Any], ...] = (
    StartSessionParams,
    StartSessionResult,
    EndSessionParams,
    EndSessionResult,
    ValidateConditionParams,
    ValidateConditionResult,
    SuggestConditionsParams,
    ReportedFinding,
    ToolFindingsParams,
    ToolFindingsResult,
    ConditionSuggestion,
    RunEvent,
    RunEventParams,
    RunEventBatch,
    GpuInfo,
    GpuParams,
    RankVerdict,
    StatusDetail,
    StatusParams,
)
INTERFACES: tuple[Interface, ...] = tuple(interface_of(payload) for payload in PAYLOADS)
INTERFACES_BY_NAME: dict[str, Interface] = {i.name: i for i in INTERFACES}

REQUESTS: tuple[Request, ...] = (
    Request(START_SESSION, "startSession", "StartSessionParams", "StartSessionResult"),
    Request(END_SESSION, "endSession", "EndSessionParams", "EndSessionResult"),
    Request(VALIDATE_CONDITION, "validateCondition", "ValidateConditionParams", "ValidateConditionResult"),
    Request(SUGGEST_CONDITIONS, "suggestConditions", "SuggestConditionsParams", "ConditionSuggestion[]"),
    Request(TOOL_FINDINGS, "toolFindings", "ToolFindingsParams", "ToolFindingsResult"),
)
NOTIFICATIONS: tuple[Notification, ...] = (
    Notification(RUN_EVENT, "runEvent", "RunEventBatch"),
    Notification(GPU, "gpu", "GpuParams"),
    Notification(STATUS, "status", "StatusParams"),
)


def field_names(interface: str) -> tuple[str, ...]:
    return tuple(f.name for f in INTERFACES_BY_NAME[interface].fields)


def json_safe(value: Any) -> Any:
    """A copy JSON (and so JavaScript) can carry: NaN/Infinity become the strings "NaN", "Infinity", "-Infinity"."""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
