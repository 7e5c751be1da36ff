"""Findings (static rules and runtime) as LSP diagnostics, and the per-document analysis cache with its debounce.

``server`` calls ``StaticAnalysis.findings`` on open/change of a Python file that uses torch and publishes
``to_diagnostic`` of that file's problems: the static findings, the tools' reports and the runs' findings, one per bug
(``core.problems.one_per_bug``), each with a ``source_label`` naming who reported it. Columns in findings count
characters; ``units`` (the negotiated position encoding's counter, UTF-16 for VS Code) converts them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lsprotocol import types

from tensorsight.core import rules
from tensorsight.core.findings import Finding

SOURCE_STATIC = "TensorSight"
SOURCE_RUNTIME = "TensorSight (run)"
DEBOUNCE_SECONDS = 0.25  # after a keystroke; opening a file analyses at once

_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}

Units = Callable[[str], int]


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def position(lines: Sequence[str], line: int, column: int, units: Units = utf16_units) -> types.Position:
    """LSP position of 1-based ``line`` and character ``column`` (clamped to the document)."""
    if not lines:
        return types.Position(line=0, character=0)
    index = min(max(line, 1), len(lines)) - 1
    text = lines[index].rstrip("\r\n")
    return types.Position(line=index, character=units(text[: max(0, column)]))


def line_range(lines: Sequence[str], line: int, units: Units = utf16_units) -> types.Range:
    """The line's text without its indentation (what an editor underlines for a whole-line finding); without the
    text (a file the server may not read), the start of that line."""
    if not lines:
        at = types.Position(line=max(line, 1) - 1, character=0)
        return types.Range(start=at, end=at)
    index = min(max(line, 1), len(lines)) - 1
    text = lines[index].rstrip("\r\n") if lines else ""
    start = len(text) - len(text.lstrip())
    end = len(text.rstrip()) or len(text)
    return types.Range(start=position(lines, index + 1, start, units), end=position(lines, index + 1, end, units))


def source_label(sources: Sequence[str]) -> str:
    """The diagnostic's ``source`` for a problem reported by ``sources`` (``core.problems.SOURCES`` names):
    ``TensorSight`` for a rule alone, ``TensorSight (run)`` for a run alone, ``TensorSight (rule + doctor + run)``."""
    if not sources or list(sources) == ["rule"]:
        return SOURCE_STATIC
    return f"{SOURCE_STATIC} ({' + '.join(sources)})"


def to_diagnostic(finding: Finding, lines: Sequence[str], source: str, units: Units = utf16_units) -> types.Diagnostic:
    details = dict(finding.details or {})
    span = details.get("range")
    if isinstance(span, dict) and lines:
        range_ = types.Range(
            start=position(lines, int(span["line"]), int(span["column"]), units),
            end=position(lines, int(span["endLine"]), int(span["endColumn"]), units),
        )
    else:
        range_ = line_range(lines, finding.line, units)
    message = finding.message
    extras = [
        text
        for text in (
            f"step {finding.step}" if finding.step is not None else "",
            f"rank {finding.rank}" if finding.rank is not None else "",
        )
        if text and text not in message  # the producer may have said it already
    ]
    if extras:
        message += f" ({', '.join(extras)})"
    code = details.get("code") or finding.kind
    data: dict[str, Any] = {"code": code, "kind": finding.kind, "line": finding.line}
    if "fix" in details:
        data["fix"] = details["fix"]
    return types.Diagnostic(
        range=range_,
        message=message,
        severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=str(code),
        source=source,
        data=data,
    )


class StaticAnalysis:
    """The rules' findings per document version, so code actions and repeated publishes do not re-analyse."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[int | None, list[Finding]]] = {}

    def findings(self, uri: str, version: int | None, source: str, path: str) -> list[Finding]:
        cached = self._cache.get(uri)
        if cached is not None and cached[0] == version and version is not None:
            return cached[1]
        found = rules.analyze(source, path) if rules.is_training_source(source) else []
        self._cache[uri] = (version, found)
        return found

    def cached(self, uri: str) -> list[Finding]:
        entry = self._cache.get(uri)
        return entry[1] if entry else []

    def forget(self, uri: str) -> None:
        self._cache.pop(uri, None)
