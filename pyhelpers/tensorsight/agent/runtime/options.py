"""Reads the environment contract that the editor (or the doctor) hands to the debugged process.

``TENSORSIGHT_HUB`` (address of the language server's hub), ``TENSORSIGHT_TOKEN`` (per-session secret) and
``TENSORSIGHT_OPTIONS`` (JSON object of launch options such as ``breakOnNonFinite``); an editor that attaches to a
running process hands the same values through its attach request instead (``set_hub``, ``set_options``). All are
optional: without them the agent works alone and sends nothing. The names, and every launch option with its type and
default, are declared in ``tensorsight.core.protocol``; features read their options through ``option`` (the hub
client reads the address and token through ``hub_address`` / ``hub_token``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from tensorsight.agent.runtime.guard import report_once
from tensorsight.core.protocol import ENV_HUB, ENV_OPTIONS, ENV_TOKEN, option_default

_cache: dict[str, Any] | None = None


def parse_options(raw: str | None) -> dict[str, Any]:
    """Parse the options JSON; a malformed value yields ``{}`` and a clear one-line message, never an exception."""
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        report_once("options-json", f"ignoring {ENV_OPTIONS}: not valid JSON ({exc})")
        return {}
    if not isinstance(value, dict):
        report_once("options-type", f"ignoring {ENV_OPTIONS}: expected a JSON object")
        return {}
    return value


def options(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The launch options of this process (parsed once from the environment)."""
    global _cache
    if environ is not None:
        return parse_options(environ.get(ENV_OPTIONS))
    if _cache is None:
        _cache = parse_options(os.environ.get(ENV_OPTIONS))
    return _cache


_DECLARED = object()


def option(name: str, default: Any = _DECLARED) -> Any:
    """One launch option; without ``default``, the contract's (an undeclared name raises KeyError: a typo must not
    read as "unset"). Callers validate the type they need."""
    if default is _DECLARED:
        default = option_default(name)
    return options().get(name, default)


def set_options(values: Mapping[str, Any]) -> None:
    """Replace the options (the doctor and tests call this instead of editing the environment)."""
    global _cache
    _cache = dict(values)


_hub_given: tuple[str, str] | None = None  # (address, token) an attached editor named (``debugger.attach``)


def set_hub(address: str, token: str) -> None:
    """The hub of an editor that attached to this running process (its attach request carried it)."""
    global _hub_given
    _hub_given = (address, token)


def hub_address() -> str | None:
    if _hub_given is not None:
        return _hub_given[0]
    return os.environ.get(ENV_HUB) or None


def hub_token() -> str | None:
    if _hub_given is not None:
        return _hub_given[1]
    return os.environ.get(ENV_TOKEN) or None
