"""Reads the environment contract that the editor (or the doctor) hands to the debugged process.

``TENSORSIGHT_HUB`` (address of the language server's hub), ``TENSORSIGHT_TOKEN`` (per-session secret) and
``TENSORSIGHT_OPTIONS`` (JSON object of launch options such as ``breakOnNonFinite``). All are optional: without them
the agent works alone and sends nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from tensorsight.agent.runtime.guard import report_once

_cache: dict[str, Any] | None = None


def parse_options(raw: str | None) -> dict[str, Any]:
    """Parse the options JSON; a malformed value yields ``{}`` and a clear one-line message, never an exception."""
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        report_once("options-json", f"ignoring TENSORSIGHT_OPTIONS: not valid JSON ({exc})")
        return {}
    if not isinstance(value, dict):
        report_once("options-type", "ignoring TENSORSIGHT_OPTIONS: expected a JSON object")
        return {}
    return value


def options(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The launch options of this process (parsed once from the environment)."""
    global _cache
    if environ is not None:
        return parse_options(environ.get("TENSORSIGHT_OPTIONS"))
    if _cache is None:
        _cache = parse_options(os.environ.get("TENSORSIGHT_OPTIONS"))
    return _cache


def option(name: str, default: Any = None) -> Any:
    """One launch option with a default; callers validate the type they need."""
    return options().get(name, default)


def set_options(values: Mapping[str, Any]) -> None:
    """Replace the options (the doctor and tests call this instead of editing the environment)."""
    global _cache
    _cache = dict(values)


def hub_address() -> str | None:
    return os.environ.get("TENSORSIGHT_HUB") or None


def hub_token() -> str | None:
    return os.environ.get("TENSORSIGHT_TOKEN") or None
