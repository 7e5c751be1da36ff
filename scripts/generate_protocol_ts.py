"""Writes ``extension/src/server/protocol.ts`` from the Python contract ``tensorsight.core.protocol``.

The extension cannot import Python, so its copy of the contract (method names, payload interfaces, event types, the
agent's environment names and launch options) is generated. Run ``.venv/bin/python scripts/generate_protocol_ts.py``
after changing the contract and commit the result; ``--check`` exits 1 when the committed file is stale (what
``tests/core/test_protocol.py`` asserts).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

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
        " * GENERATED from pyhelpers/tensorsight/core/protocol.py by scripts/generate_protocol_ts.py; do not edit by",
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

    out += ["/** Each request's params and answer, by method. */", "export interface Requests {"]
    out += [f"  '{r.method}': {{ params: {r.params}; result: {r.result} }};" for r in protocol.REQUESTS]
    out += ["}", "", "/** Each notification's params, by method. */", "export interface Notifications {"]
    out += [f"  '{n.method}': {n.params};" for n in protocol.NOTIFICATIONS]
    out += ["}", ""]
    return "\n".join(out)


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
