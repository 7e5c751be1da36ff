"""What a static rule reports: its metadata (code, kind, severity, one-line why) and its quick fix as plain text edits.

The rule modules in this package build ``Finding`` objects through ``RuleInfo.finding``; the language server turns
``details["fix"]`` into an LSP code action and the doctor prints the message. Positions in a fix use the finding's
convention: 1-based lines and 0-based columns counted in Python characters (code points); the server converts
columns to the client's UTF-16 units.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tensorsight.core.findings import Finding
from tensorsight.core.l10n import t


@dataclass(frozen=True)
class TextEdit:
    """Replace the text between (line, column) and (end_line, end_column) with ``new_text`` (an insertion if empty)."""

    line: int
    column: int
    end_line: int
    end_column: int
    new_text: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "column": self.column,
            "endLine": self.end_line,
            "endColumn": self.end_column,
            "newText": self.new_text,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TextEdit:
        return cls(
            int(data["line"]), int(data["column"]), int(data["endLine"]), int(data["endColumn"]), str(data["newText"])
        )


@dataclass(frozen=True)
class Fix:
    """A quick fix: a title for the editor's light bulb and the edits that make it."""

    title: str
    edits: Sequence[TextEdit]

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "edits": [edit.to_dict() for edit in self.edits]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fix:
        return cls(str(data["title"]), tuple(TextEdit.from_dict(e) for e in data["edits"]))


@dataclass(frozen=True)
class Span:
    """Where a finding underlines: 1-based lines, 0-based character columns."""

    line: int
    column: int
    end_line: int
    end_column: int

    def to_dict(self) -> dict[str, int]:
        return {"line": self.line, "column": self.column, "endLine": self.end_line, "endColumn": self.end_column}


@dataclass(frozen=True)
class RuleInfo:
    """One rule: a stable code users can look up or silence, and a one-line why shown in the editor.

    ``seen_at_runtime_as``: the kind of the runtime finding that reports the same bug at the same line, when a run can
    observe it (TS104's accumulated graph is the agent's ``memory`` finding): Problems shows the two as one.
    ``seen_at_runtime_check``: the ``check`` in that runtime finding's details, when its kind alone names several
    bugs (``training-logic``).
    ``raised_at_runtime_check``: the ``check`` of the runtime finding (of the rule's kind) that explains the error
    this bug makes the program raise at another line, the rule's ``details.raised_at`` (TS107's carried state makes
    the next ``backward()`` raise "backward through the graph a second time", explained as ``graph-reused``):
    Problems shows the two as one, at the rule's line, where the fix goes.
    """

    code: str
    name: str
    kind: str
    severity: str
    why: str
    extra: dict[str, Any] = field(default_factory=dict)
    seen_at_runtime_as: str | None = None
    seen_at_runtime_check: str | None = None
    raised_at_runtime_check: str | None = None

    def finding(
        self, path: str, span: Span, message: str | None = None, fix: Fix | None = None, severity: str | None = None
    ) -> Finding:
        details: dict[str, Any] = {"code": self.code, "rule": self.name, "range": span.to_dict()}
        if fix is not None:
            details["fix"] = fix.to_dict()
        return Finding(
            kind=self.kind,
            severity=severity or self.severity,
            message=message or t(self.why),
            file=path,
            line=span.line,
            details=details,
        )
