"""Writes ``extension/src/server/protocol.ts`` from the Python contract ``tensorsight.core.protocol``.

The extension cannot import Python, so its copy of the contract (method names, payload interfaces, event types, the
agent's environment names and launch options) is generated. Run ``.venv/bin/python scripts/generate_protocol_ts.py``
after changing the contract and commit the result; ``--check`` exits 1 when the committed file is stale (what
``tests/core/test_protocol.py`` asserts).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import sys
import types
import typing
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGET = ROOT / "extension" / "src" / "server" / "protocol.ts"
sys.path.insert(0, str(ROOT / "pyhelpers"))

from tensorsight.core import protocol  # noqa: E402 - after the path set-up

_OPTION_TYPES = {
    "bool": "boolean",
    "count": "number",
    "positive": "number",
    "share": "number",
    "path": "string | null",
    "link": "string | null",
    "level": "string",
    "ranks": "number | number[] | null",
}


def render() -> str:
    """The whole TypeScript module, deterministic (same contract, same bytes)."""
    out: list[str] = [
        "/**",
        " * TensorSight's contract with pyhelpers/tensorsight: the custom LSP methods and their payloads, the run",
        " * event types the server forwards, the debuggee's environment and the launch options in TENSORSIGHT_OPTIONS.",
        " *",
        " * GENERATED from pyhelpers/tensorsight/core/protocol/ by scripts/generate_protocol_ts.py; do not edit by",
        " * hand (tests/core/test_protocol.py fails when this file is stale).",
        " */",
        "",
        "export const Methods = {",
    ]
    out += [f"  {r.key}: '{r.method}'," for r in protocol.REQUESTS]
    out += [f"  {n.key}: '{n.method}'," for n in protocol.NOTIFICATIONS]
    out += ["} as const;", ""]

    out += ["/** The environment the extension gives the debuggee (the agent reads it). */"]
    out += ["export const AgentEnvironment = {"]
    names = {
        protocol.ENV_HUB: "hub",
        protocol.ENV_TOKEN: "token",
        protocol.ENV_OPTIONS: "options",
        protocol.ENV_SESSION: "session",
        protocol.ENV_LOCALE: "locale",
    }
    out += [f"  {names[env]}: '{env}'," for env in protocol.AGENT_ENVIRONMENT]
    out += ["} as const;", ""]
    out += ["/** The attach request's key that carries AgentEnvironment to a running agent (through pydevd). */"]
    out += [f"export const ATTACH_AGENT_KEY = '{protocol.ATTACH_AGENT_KEY}';", ""]
    out += ["/** The language server's own environment. */", "export const ServerEnvironment = {"]
    out += [f"  bundledLibs: '{protocol.ENV_BUNDLED_LIBS}',", f"  logLevel: '{protocol.ENV_LOG_LEVEL}',"]
    out += [f"  locale: '{protocol.ENV_LOCALE}',"]
    out += ["} as const;", ""]

    forwarded = sorted(protocol.FORWARDED_EVENT_TYPES | {e.name for e in protocol.SERVER_EVENTS})
    out += ["/** The `type` of every run event the server sends as `tensorsight/runEvent` (agents' and its own). */"]
    out += ["export const RUN_EVENT_TYPES = ["]
    out += [f"  '{name}'," for name in forwarded]
    out += ["] as const;", "export type RunEventType = (typeof RUN_EVENT_TYPES)[number];", ""]

    out += ["/** Launch options (TENSORSIGHT_OPTIONS, camelCase); every key is optional. */"]
    out += ["export interface LaunchOptions {"]
    for option in protocol.LAUNCH_OPTIONS:
        out += [f"  /** {option.doc} */", f"  {option.name}?: {_OPTION_TYPES[option.kind]};"]
    out += ["}", ""]
    out += ["/** What the agent assumes for an option that is not given. */"]
    out += ["export const LAUNCH_OPTION_DEFAULTS: Required<LaunchOptions> = {"]
    out += [f"  {o.name}: {_literal(o.default)}," for o in protocol.LAUNCH_OPTIONS]
    out += ["};", ""]

    out += ['/** The debugpy launch fields a "Debug Training" configuration gets when it leaves them out. */']
    out += ["export const DEBUG_TRAINING_DEFAULTS = {"]
    out += [f"  {key}: {_literal(value)}," for key, value in protocol.DEBUG_TRAINING_DEFAULTS.items()]
    out += ["} as const;", ""]

    out += ["/** The default of each `tensorsight.*` setting (package.json declares the same). */"]
    out += ["export const SETTING_DEFAULTS = {"]
    out += [f"  {_key(key)}: {_literal(value)}," for key, value in protocol.SETTING_DEFAULTS.items()]
    out += ["} as const;", ""]

    out += ["/** A run's phase breakdown leaves its first step out once this many later steps are measured. */"]
    out += [f"export const PHASE_STEPS_WITHOUT_THE_FIRST = {protocol.PHASE_STEPS_WITHOUT_THE_FIRST};", ""]

    for interface in protocol.INTERFACES:
        if interface.doc:
            out += [f"/** {interface.doc} */"]
        out += [f"export interface {interface.name} {{"]
        for field in interface.fields:
            if field.doc:
                out += [f"  /** {field.doc} */"]
            out += [f"  {field.name}{'?' if field.optional else ''}: {field.ts_type};"]
        if interface.open_ended:
            out += ["  [key: string]: unknown;"]
        out += ["}", ""]

    out += _run_events()

    out += ["/** Each request's params and answer, by method. */", "export interface Requests {"]
    out += [f"  '{r.method}': {{ params: {r.params}; result: {r.result} }};" for r in protocol.REQUESTS]
    out += ["}", "", "/** Each notification's params, by method. */", "export interface Notifications {"]
    out += [f"  '{n.method}': {n.params};" for n in protocol.NOTIFICATIONS]
    out += ["}", ""]
    return "\n".join(out)


def _run_events() -> list[str]:
    """The run events' payload interfaces (from the contract's dataclasses), their union, and the schema table that
    ``parseRunEvent`` checks a received event against (the same rules as the server's ``parse_event``)."""
    nested: dict[str, type] = {}
    for event in protocol.RUN_EVENTS.values():
        _collect_nested(event.payload, nested)
    out = [
        "/** A number as JSON carries it: NaN and the infinities arrive as these strings. */",
        "export type WireNumber = number | 'NaN' | 'Infinity' | '-Infinity';",
        "",
    ]
    for name, cls in sorted(nested.items()):
        out += [f"export interface {name} {{"]
        out += [_ts_field(field, annotation, optional) for field, annotation, optional in protocol.payload_fields(cls)]
        out += ["}", ""]
    names: list[str] = []
    for event_type, event in sorted(protocol.RUN_EVENTS.items()):
        names.append(event.payload.__name__)
        out += [f"/** {event.doc} */", f"export interface {event.payload.__name__} {{", f"  type: '{event_type}';"]
        out += [
            _ts_field(f, annotation, optional) for f, annotation, optional in protocol.payload_fields(event.payload)
        ]
        out += ["}", ""]
    out += ["/** A run event the contract declares, as parseRunEvent returns it. */", "export type KnownRunEvent ="]
    out += [f"  | {name}" + (";" if index == len(names) - 1 else "") for index, name in enumerate(names)]
    out += [""]
    out += [
        "/** A field's type in the schema table: a JSON type, a list, a string-keyed object, a payload, a union. */",
        "export type WireType =",
        "  | 'str'",
        "  | 'int'",
        "  | 'float'",
        "  | 'bool'",
        "  | 'null'",
        "  | 'any'",
        "  | readonly ['list', WireType]",
        "  | readonly ['dict', WireType]",
        "  | readonly ['object', string]",
        "  | readonly ['literal', ...string[]]",
        "  | readonly ['union', ...WireType[]];",
        "/** `required`: a missing key is an error (a field that may be null or is optional may be missing). */",
        "export type WireFields = Readonly<Record<string, { type: WireType; required: boolean }>>;",
        "",
        "/** The fields of each run event and payload (nested ones too), by event type or payload name. */",
        "export const WIRE_FIELDS: Readonly<Record<string, WireFields>> = {",
    ]
    tables = [(f"'{t}'" if not t.isidentifier() else t, e.payload) for t, e in sorted(protocol.RUN_EVENTS.items())]
    # the request and notification payloads too (parsePayload), with the payloads nested in them
    payloads = dict(nested)
    for payload in protocol.PAYLOADS:
        payloads.setdefault(payload.__name__, payload)
        _collect_nested(payload, payloads)
    tables += sorted(payloads.items())
    for key, cls in tables:
        out += [f"  {key}: {{"]
        for field, annotation, optional in protocol.payload_fields(cls):
            required = not optional and not protocol.admits_none(annotation)
            out += [f"    {field}: {{ type: {_wire_type(annotation)}, required: {str(required).lower()} }},"]
        out += ["  },"]
    out += ["};", ""]
    out += PARSER.splitlines()
    out += [""]
    out += ["/** Each request's and notification's payload interface by name, as parsePayload returns it. */"]
    out += ["export interface Payloads {"]
    out += [f"  {payload.__name__}: {payload.__name__};" for payload in protocol.PAYLOADS]
    out += ["}", ""]
    out += PAYLOAD_PARSER.splitlines()
    out += [""]
    return out


def _collect_nested(cls: type, found: dict[str, type]) -> None:
    for _name, annotation, _optional in protocol.payload_fields(cls):
        for inner in _walk(annotation):
            if dataclasses.is_dataclass(inner) and isinstance(inner, type) and inner.__name__ not in found:
                found[inner.__name__] = inner
                _collect_nested(inner, found)


def _walk(annotation: Any) -> list[Any]:
    args = typing.get_args(annotation)
    return [annotation, *(inner for arg in args for inner in _walk(arg))]


def _ts_field(name: str, annotation: Any, optional: bool) -> str:
    nullable = optional or protocol.admits_none(annotation)
    text = _ts_type(_without_none(annotation))
    return f"  {name}{'?' if nullable else ''}: {text}{' | null' if nullable else ''};"


def _without_none(annotation: Any) -> Any:
    if protocol.admits_none(annotation):
        rest = [a for a in typing.get_args(annotation) if a is not type(None)]
        return rest[0] if len(rest) == 1 else typing.Union[tuple(rest)]  # noqa: UP007 - built from a list
    return annotation


def _ts_type(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_ts_type(a) for a in typing.get_args(annotation))
    if origin is list:
        (item,) = typing.get_args(annotation)
        inner = _ts_type(item)
        return f"({inner})[]" if " | " in inner else f"{inner}[]"
    if origin is dict:
        return f"Record<string, {_ts_type(typing.get_args(annotation)[1])}>"
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        return annotation.__name__
    return _TS_SCALARS[annotation]


def _wire_type(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return "['union', " + ", ".join(_wire_type(a) for a in typing.get_args(annotation)) + "]"
    if origin is list:
        return f"['list', {_wire_type(typing.get_args(annotation)[0])}]"
    if origin is dict:
        return f"['dict', {_wire_type(typing.get_args(annotation)[1])}]"
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        return f"['object', '{annotation.__name__}']"
    if origin is typing.Literal:
        return "['literal', " + ", ".join(_literal(value) for value in typing.get_args(annotation)) + "]"
    return f"'{_WIRE_SCALARS[annotation]}'"


_TS_SCALARS: dict[Any, str] = {
    str: "string",
    int: "number",
    float: "WireNumber",
    bool: "boolean",
    type(None): "null",
    Any: "unknown",
}
_WIRE_SCALARS: dict[Any, str] = {str: "str", int: "int", float: "float", bool: "bool", type(None): "null", Any: "any"}

# The reader of the schema table, the same rules as core.protocol.parse_event (kept beside the table it reads).
PARSER = """/** What parseRunEvent makes of a received value: the typed event, or why it is not one. */
export type ParsedRunEvent = { ok: true; event: KnownRunEvent } | { ok: false; type?: string; error: string };

/**
 * Checks a received run event against the contract (keys the contract does not declare are ignored; a missing
 * required key, a value of the wrong type or an unknown `type` is an error), as the server's parse_event does.
 */
export function parseRunEvent(value: unknown): ParsedRunEvent {
  if (!isWireObject(value)) return { ok: false, error: 'a run event must be an object' };
  const type = value.type;
  if (typeof type !== 'string' || !type) return { ok: false, error: 'event without a type' };
  const fields = Object.hasOwn(WIRE_FIELDS, type) ? WIRE_FIELDS[type] : undefined;
  if (fields === undefined) return { ok: false, type, error: `unknown event type '${type}'` };
  const error = wireFieldsError(value, fields, '');
  return error === undefined ? { ok: true, event: value as unknown as KnownRunEvent } : { ok: false, type, error };
}

function wireFieldsError(value: Record<string, unknown>, fields: WireFields, where: string): string | undefined {
  for (const [key, field] of Object.entries(fields)) {
    const item = value[key];
    if (item === undefined || (item === null && !field.required)) {
      if (field.required) return `'${where}${key}' is missing`;
      continue;
    }
    const error = wireTypeError(item, field.type, `${where}${key}`);
    if (error !== undefined) return error;
  }
  return undefined;
}

function wireTypeError(value: unknown, type: WireType, name: string): string | undefined {
  if (typeof type === 'string') {
    const fits =
      type === 'any' ||
      (type === 'null' && value === null) ||
      (type === 'str' && typeof value === 'string') ||
      (type === 'bool' && typeof value === 'boolean') ||
      (type === 'int' && typeof value === 'number' && Number.isInteger(value)) ||
      (type === 'float' &&
        (typeof value === 'number' || value === 'NaN' || value === 'Infinity' || value === '-Infinity'));
    return fits ? undefined : `'${name}' must be ${type}`;
  }
  const [kind, ...rest] = type;
  if (kind === 'literal') {
    return (rest as unknown[]).includes(value) ? undefined : `'${name}' must be one of ${rest.join(', ')}`;
  }
  if (kind === 'union') {
    const options = rest as WireType[];
    if (options.some((option) => wireTypeError(value, option, name) === undefined)) return undefined;
    // `list | null` given a list: say which item is wrong (as parse_payload does)
    const others = options.filter((option) => option !== 'null');
    const only = others.length === 1 ? others[0] : undefined;
    if (only !== undefined && typeof only !== 'string' && value !== null) return wireTypeError(value, only, name);
    const words = options.map((option) => (typeof option === 'string' ? option : option[0]));
    return `'${name}' must be ${words.join(' or ')}`;
  }
  if (kind === 'list') {
    if (!Array.isArray(value)) return `'${name}' must be a list`;
    for (const [index, item] of value.entries()) {
      const error = wireTypeError(item, rest[0] as WireType, `${name}[${index}]`);
      if (error !== undefined) return error;
    }
    return undefined;
  }
  if (!isWireObject(value)) return `'${name}' must be an object`;
  if (kind === 'object') return wireFieldsError(value, WIRE_FIELDS[rest[0] as string] ?? {}, `${name}.`);
  for (const [key, item] of Object.entries(value)) {
    const error = wireTypeError(item, rest[0] as WireType, `${name}.${key}`);
    if (error !== undefined) return error;
  }
  return undefined;
}

function isWireObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}"""


# The reader of a request's or notification's payload (a tool's findings, a server's answer): the same table and rules
# as parseRunEvent, and as the server's parse_payload.
PAYLOAD_PARSER = """/** What parsePayload makes of a received value: the typed payload, or why it is not one. */
export type ParsedPayload<K extends keyof Payloads> = { ok: true; value: Payloads[K] } | { ok: false; error: string };

/**
 * Checks a received payload (a request's answer, a finding of a tool's report) against the contract's interface
 * `name`, with the rules of parseRunEvent (and of the server's parse_payload): keys it does not declare are ignored.
 */
export function parsePayload<K extends keyof Payloads>(name: K, value: unknown): ParsedPayload<K> {
  if (!isWireObject(value)) return { ok: false, error: `${name} must be an object` };
  const error = wireFieldsError(value, WIRE_FIELDS[name] ?? {}, '');
  return error === undefined ? { ok: true, value: value as unknown as Payloads[K] } : { ok: false, error };
}"""


def _key(name: str) -> str:
    """An object key as prettier writes it: bare when it is an identifier, quoted otherwise."""
    return name if name.isidentifier() else _literal(name)


def _literal(value: object) -> str:
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return json.dumps(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed file differs")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET.relative_to(ROOT)} is stale: run scripts/generate_protocol_ts.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
