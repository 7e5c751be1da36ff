"""The words TensorSight's Python side shows the user, in the editor's display language.

``t(message, *args, **named)`` returns ``message`` (English, the catalogue key) translated to the process's
language, with ``{0}``-style positional and ``{name}``-style named placeholders filled in, the same format as
VS Code's ``vscode.l10n.t`` and its ``bundle.l10n.<lang>.json`` files, so a translator sees one format on both
sides. The catalogues are ``tensorsight/l10n/<lang>.json`` (English message -> translation), shipped with the
wheel and the .vsix.

The language is chosen once per process: the language server sets it from the LSP ``initialize`` request's
``locale`` (``set_language``); every other process (the agent in the debuggee, the doctor and the other CLI tools)
reads ``TENSORSIGHT_LOCALE`` (``protocol.ENV_LOCALE``), which the extension sets from ``vscode.env.language``.
Unknown languages, a missing or unreadable catalogue and a message that has no entry all fall back to English;
nothing here raises (a placeholder without a value stays as written).

Who calls it: the static rules (``core/rules``), the server's diagnostics, code lenses and hovers, the agent's stop
reasons and Debug Console messages, and the doctor. Stdlib only (the agent imports it inside the user's process).
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any

from tensorsight.core.protocol import ENV_LOCALE

DEFAULT_LANGUAGE = "en"
CATALOGUE_FOLDER = Path(__file__).resolve().parent.parent / "l10n"
_PLACEHOLDER = re.compile(r"\{(\w+)\}")

_lock = threading.Lock()
_language: str | None = None  # None: not chosen yet (the first t() reads the environment)
_catalogue: dict[str, str] = {}


def language_of(locale: object) -> str:
    """The catalogue language of a VS Code / BCP 47 locale: ``"es-ES"``, ``"es_419"`` -> ``"es"``; else ``"en"``."""
    if not isinstance(locale, str):
        return DEFAULT_LANGUAGE
    primary = re.split(r"[-_.@]", locale.strip().lower(), maxsplit=1)[0]
    return primary if re.fullmatch(r"[a-z]{2,3}", primary) else DEFAULT_LANGUAGE


def load_catalogue(language: str, folder: Path = CATALOGUE_FOLDER) -> dict[str, str]:
    """The translations of ``language`` (empty for English, an unknown language or an unreadable file)."""
    if language == DEFAULT_LANGUAGE or not re.fullmatch(r"[a-z]{2,3}", language):
        return {}
    try:
        data = json.loads((folder / f"{language}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str) and v}


def set_language(locale: object) -> str:
    """Chooses the process's language from a locale (``None``/unknown: English); returns the language in use."""
    global _language, _catalogue
    language = language_of(locale)
    catalogue = load_catalogue(language)
    with _lock:
        _language = language if catalogue else DEFAULT_LANGUAGE
        _catalogue = catalogue
        return _language


def current_language() -> str:
    """The language ``t`` translates to (chosen from the environment on first use)."""
    if _language is None:
        set_language(os.environ.get(ENV_LOCALE))
    return _language or DEFAULT_LANGUAGE


def t(message: str, /, *args: Any, **named: Any) -> str:
    """``message`` in the process's language with its placeholders filled (English when there is no entry)."""
    try:
        if _language is None:
            current_language()
        template = _catalogue.get(message, message)
        if not args and not named:
            return template
        return fill(template, args, named)
    except Exception:  # noqa: BLE001 - a translation must never break the caller
        return message


def mark(message: str) -> str:
    """``message`` unchanged: marks an English constant that is translated later, where it is shown (``t(NAME)``),
    so the catalogue check (tests/core/test_l10n.py) finds it like a literal ``t("...")``."""
    return message


def fill(template: str, args: tuple[Any, ...] | list[Any], named: dict[str, Any]) -> str:
    """``{0}`` -> ``args[0]``, ``{name}`` -> ``named["name"]``; any other braces are left as written."""

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if key.isdigit():
            index = int(key)
            return str(args[index]) if index < len(args) else match.group(0)
        return str(named[key]) if key in named else match.group(0)

    return _PLACEHOLDER.sub(value, template)


def placeholders(message: str) -> set[str]:
    """The placeholder names of a message (``{"0", "name"}``), for checking that a translation keeps them."""
    return set(_PLACEHOLDER.findall(message))


__all__ = [
    "current_language",
    "fill",
    "language_of",
    "load_catalogue",
    "mark",
    "placeholders",
    "set_language",
    "t",
]
