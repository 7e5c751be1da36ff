"""Quick-fix builders (insert a line, replace an expression, remove a statement) and ``apply_fix`` to check them.

A fix is only offered where it is safe as a plain text edit: the statement it anchors on must own its lines (no
``a; b`` on one line, no one-line ``if x: y``), and removing a statement never leaves an empty block. Builders
return None when that does not hold, and the rule then reports without a fix.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from tensorsight.core.rules.facts import ModuleFacts
from tensorsight.core.rules.model import Fix, TextEdit


def owns_lines(facts: ModuleFacts, stmt: ast.stmt) -> bool:
    """The statement starts its first line (after indentation) and nothing but a comment follows it."""
    first = facts.lines[stmt.lineno - 1]
    start = facts.char_col(stmt.lineno, stmt.col_offset)
    if first[:start].strip():
        return False
    end_line = stmt.end_lineno or stmt.lineno
    last = facts.lines[end_line - 1]
    end = facts.char_col(end_line, stmt.end_col_offset or 0)
    rest = last[end:].strip()
    return rest == "" or rest.startswith("#")


def insert_line_after(facts: ModuleFacts, stmt: ast.stmt, code: str) -> TextEdit | None:
    """A new line with ``code`` right after ``stmt``, at the same indentation."""
    if not owns_lines(facts, stmt):
        return None
    indent = facts.indent_of(stmt.lineno)
    end_line = stmt.end_lineno or stmt.lineno
    if end_line >= len(facts.lines):  # last line of a file without a final newline
        column = len(facts.lines[end_line - 1])
        return TextEdit(end_line, column, end_line, column, f"\n{indent}{code}")
    return TextEdit(end_line + 1, 0, end_line + 1, 0, f"{indent}{code}\n")


def insert_line_before(facts: ModuleFacts, stmt: ast.stmt, code: str) -> TextEdit | None:
    """A new line with ``code`` right before ``stmt``, at the same indentation."""
    if not owns_lines(facts, stmt):
        return None
    indent = facts.indent_of(stmt.lineno)
    return TextEdit(stmt.lineno, 0, stmt.lineno, 0, f"{indent}{code}\n")


def replace_node(facts: ModuleFacts, node: ast.AST, new_text: str) -> TextEdit:
    span = facts.span(node)
    return TextEdit(span.line, span.column, span.end_line, span.end_column, new_text)


def insert_after_node(facts: ModuleFacts, node: ast.AST, text: str) -> TextEdit:
    span = facts.span(node)
    return TextEdit(span.end_line, span.end_column, span.end_line, span.end_column, text)


def remove_statement(facts: ModuleFacts, stmt: ast.stmt) -> TextEdit | None:
    """Delete the statement's lines; a statement alone in its block becomes ``pass`` so the block stays valid."""
    if not owns_lines(facts, stmt):
        return None
    located = facts.block_of(stmt)
    if located is None:
        return None
    block, _ = located
    end_line = stmt.end_lineno or stmt.lineno
    if len(block) == 1:
        span = facts.span(stmt)
        return TextEdit(span.line, span.column, span.end_line, span.end_column, "pass")
    if end_line >= len(facts.lines):
        previous = stmt.lineno - 1
        if previous < 1:
            return TextEdit(stmt.lineno, 0, end_line, len(facts.lines[end_line - 1]), "")
        return TextEdit(previous, len(facts.lines[previous - 1]), end_line, len(facts.lines[end_line - 1]), "")
    return TextEdit(stmt.lineno, 0, end_line + 1, 0, "")


def move_statement_after(facts: ModuleFacts, stmt: ast.stmt, anchor: ast.stmt) -> list[TextEdit] | None:
    """Remove ``stmt`` and re-insert its text after ``anchor`` (both in one block, ``stmt`` first or last)."""
    if not (owns_lines(facts, stmt) and owns_lines(facts, anchor)):
        return None
    text_lines = facts.lines[stmt.lineno - 1 : (stmt.end_lineno or stmt.lineno)]
    own_indent = facts.indent_of(stmt.lineno)
    anchor_indent = facts.indent_of(anchor.lineno)
    if own_indent != anchor_indent:
        return None
    body = "\n".join(line[len(own_indent) :] if line.startswith(own_indent) else line for line in text_lines)
    removal = remove_statement(facts, stmt)
    insertion = insert_line_after(facts, anchor, body.replace("\n", "\n" + own_indent))
    if removal is None or insertion is None or removal.new_text:
        return None
    return [removal, insertion]


def wrap_in_block(facts: ModuleFacts, stmt: ast.stmt, header: str) -> TextEdit | None:
    """Indent ``stmt`` one level under a new ``header:`` line (e.g. ``with torch.no_grad():``).

    Refused when the statement holds a multi-line string (re-indenting would change its value) or does not own its
    lines.
    """
    if not owns_lines(facts, stmt):
        return None
    first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
    for node in ast.walk(stmt):
        if isinstance(node, (ast.Constant, ast.JoinedStr)) and (node.end_lineno or node.lineno) != node.lineno:
            if isinstance(node, ast.JoinedStr) or isinstance(node.value, (str, bytes)):
                return None
    indent = facts.indent_of(first)
    unit = _indent_unit(facts, stmt) or "    "
    out = [f"{indent}{header}"]
    for number in range(first, last + 1):
        line = facts.lines[number - 1]
        out.append(unit + line if line.strip() else line)
    return TextEdit(first, 0, last, len(facts.lines[last - 1]), "\n".join(out))


def _indent_unit(facts: ModuleFacts, stmt: ast.stmt) -> str | None:
    body = getattr(stmt, "body", None)
    if isinstance(body, list) and body and body[0].lineno != stmt.lineno:
        outer = facts.indent_of(stmt.lineno)
        inner = facts.indent_of(body[0].lineno)
        if inner.startswith(outer) and len(inner) > len(outer):
            return inner[len(outer) :]
    return None


def make_fix(title: str, edits: Sequence[TextEdit | None] | None) -> Fix | None:
    if not edits or any(edit is None for edit in edits):
        return None
    return Fix(title, tuple(edit for edit in edits if edit is not None))


def apply_fix(source: str, fix: Fix) -> str:
    """The source after the fix's edits (applied back to front so positions stay valid)."""
    lines = source.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)

    def offset(line: int, column: int) -> int:
        if line > len(lines):
            return len(source)
        return min(offsets[line - 1] + column, len(source))

    result = source
    for edit in sorted(fix.edits, key=lambda e: (e.line, e.column), reverse=True):
        start, end = offset(edit.line, edit.column), offset(edit.end_line, edit.end_column)
        result = result[:start] + edit.new_text + result[end:]
    return result
