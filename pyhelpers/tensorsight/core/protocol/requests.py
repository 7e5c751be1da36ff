"""The contract's extension <-> server half: the custom LSP requests and notifications and their payloads.

Each method's name, its params and answer as frozen dataclasses (read by the server with ``parse_payload``), and their
TypeScript view (``INTERFACES``, ``REQUESTS``, ``NOTIFICATIONS``) that ``scripts/generate_protocol_ts.py`` writes into
the extension's ``protocol.ts`` (with a ``parsePayload`` applying the same rules). Used by the server (``server``,
``conditions``, ``run_events``, ``gpu_monitor``) and the generator, through ``tensorsight.core.protocol``. Pure and
stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from types import UnionType
from typing import Any, ClassVar, Literal, Union, get_args, get_origin

from tensorsight.core.protocol.options import ENV_HUB, ENV_TOKEN
from tensorsight.core.protocol.wire import _hints, _optional, _strip_none

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
