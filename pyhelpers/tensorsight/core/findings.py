"""The findings model shared by the doctor's JSON, hub events and LSP diagnostics.

A finding is one diagnosed problem at one user source line. The wire form is the design contract:
``{"findings": [{"kind", "severity", "message", "file", "line", "step"?, "rank"?, "details"?}]}``.

The step and the rank are fields, never words of the message: whoever shows a finding adds them with
``finding_context`` (the server's diagnostics, the doctor's report; the extension's ``findingText`` does the same).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tensorsight.core.l10n import t

KINDS = (
    "nonfinite",
    "shape",
    "device",
    "leakage",
    "training-logic",
    "memory",
    "performance",
    "dynamics",
)
SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    """One problem found in a training program, pointing at the user's line that causes it."""

    kind: str
    severity: str
    message: str
    file: str
    line: int
    step: int | None = None
    rank: int | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown finding kind {self.kind!r}; expected one of {', '.join(KINDS)}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}; expected one of {', '.join(SEVERITIES)}")

    def to_dict(self) -> dict[str, Any]:
        """The wire form: optional keys appear only when they carry a value."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "severity": self.severity,
            "message": self.message,
            "file": self.file,
            "line": int(self.line),
        }
        if self.step is not None:
            out["step"] = int(self.step)
        if self.rank is not None:
            out["rank"] = int(self.rank)
        if self.details:
            out["details"] = dict(self.details)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Finding:
        """Parse the wire form; raises ValueError on a malformed finding."""
        try:
            return cls(
                kind=str(data["kind"]),
                severity=str(data["severity"]),
                message=str(data["message"]),
                file=str(data["file"]),
                line=int(data["line"]),
                step=None if data.get("step") is None else int(data["step"]),
                rank=None if data.get("rank") is None else int(data["rank"]),
                details=dict(data.get("details") or {}),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed finding: {exc}") from exc


def findings_document(findings: Iterable[Finding]) -> dict[str, Any]:
    """The doctor's ``--json`` document: findings sorted by file, line, then kind, duplicates removed."""
    unique: dict[tuple[Any, ...], Finding] = {}
    for finding in findings:
        key = (finding.kind, finding.file, finding.line, finding.message, finding.rank)
        unique.setdefault(key, finding)
    ordered = sorted(unique.values(), key=lambda f: (f.file, f.line, f.kind, f.message))
    return {"findings": [f.to_dict() for f in ordered]}


def place_text(file: str, line: int, beside: str) -> str:
    """How a message names another line: ``line N`` in the file it is shown in (``beside``), ``name.py:N`` in
    another file."""
    same = os.path.normcase(os.path.normpath(file)) == os.path.normcase(os.path.normpath(beside))
    return t("line {0}", line) if same else f"{os.path.basename(file)}:{line}"


def finding_context(step: int | None, rank: int | None) -> str:
    """The words a shown finding ends with: `` (step 12, rank 1)`` in the display language, or "" without either."""
    extras = [
        text
        for text in (t("step {0}", step) if step is not None else "", t("rank {0}", rank) if rank is not None else "")
        if text
    ]
    return f" ({', '.join(extras)})" if extras else ""


def shown_message(finding: Finding) -> str:
    """The message as a person reads it: the producer's words, then the step and rank (``finding_context``)."""
    return finding.message + finding_context(finding.step, finding.rank)


def format_finding(finding: Finding) -> str:
    """One human line for terminals: ``file:line: severity [kind] message (step N, rank R)``."""
    return f"{finding.file}:{finding.line}: {finding.severity} [{finding.kind}] {shown_message(finding)}"
