"""Quick fixes: the rules' text edits (``details["fix"]``) as LSP code actions on the diagnostics they fix.

``server`` answers ``textDocument/codeAction`` with ``quick_fixes`` over the current findings of the document (never
over stale diagnostic data a client sends back), for the findings on the requested lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsprotocol import types

from tensorsight.core.findings import Finding
from tensorsight.server.diagnostics import Units, position, utf16_units


def fix_edits(fix: dict[str, Any], lines: Sequence[str], units: Units = utf16_units) -> list[types.TextEdit]:
    edits = []
    for edit in fix.get("edits", []):
        start = _edit_position(lines, int(edit["line"]), int(edit["column"]), units)
        end = _edit_position(lines, int(edit["endLine"]), int(edit["endColumn"]), units)
        edits.append(types.TextEdit(range=types.Range(start=start, end=end), new_text=str(edit["newText"])))
    return edits


def _edit_position(lines: Sequence[str], line: int, column: int, units: Units) -> types.Position:
    if line > len(lines):  # the end of the document
        return types.Position(line=len(lines), character=0)
    return position(lines, line, column, units)


def quick_fixes(
    uri: str,
    findings: Sequence[Finding],
    lines: Sequence[str],
    requested: types.Range,
    diagnostics: Sequence[types.Diagnostic],
    units: Units = utf16_units,
) -> list[types.CodeAction]:
    """One preferred quick fix per fixable finding whose line falls in ``requested`` (0-based LSP lines)."""
    actions = []
    for finding in findings:
        fix = (finding.details or {}).get("fix")
        if not fix or not requested.start.line <= finding.line - 1 <= requested.end.line:
            continue
        code = str((finding.details or {}).get("code", ""))
        linked = [
            d for d in diagnostics if str(d.code) == code and d.range.start.line <= finding.line - 1 <= d.range.end.line
        ]
        actions.append(
            types.CodeAction(
                title=f"{fix['title']} ({code})",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=linked or None,
                is_preferred=True,
                edit=types.WorkspaceEdit(changes={uri: fix_edits(fix, lines, units)}),
            )
        )
    return actions
