"""``textDocument/inlayHint``: the shapes a run observed, shown at the assignment lines that produced them.

``server`` answers the request with ``inlay_hints`` over the runtime view's ``ShapeSeen`` records of the document's
file (``x = self.fc1(h)`` shows ``x: f32[64, 16]``; ``for xb, yb in loader:``, with no ``=`` to stand after, shows
``f32[64, 20], i64[64]`` at the line's end). The agent publishes only the tensors a line assigned
(``agent.shapes.observers``), so a hint is never another expression of the line. Pure apart from the LSP types: the
document's lines and the position-encoding counter are passed in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from lsprotocol import types

from tensorsight.server.diagnostics import Units
from tensorsight.server.runtime_view import ShapeSeen

# an assignment's ``=``: not part of ``==``, ``!=``, ``<=``, ``+=``, a keyword argument's ``:=`` ...
_ASSIGNMENT = re.compile(r"(?<![=!<>+\-*/%&|^@:])=(?!=)")


def inlay_hints(
    observed: Iterable[ShapeSeen], lines: Sequence[str], visible: types.Range, units: Units
) -> list[types.InlayHint]:
    """One type hint per observed shape on the ``visible`` lines of the document."""
    hints = []
    for seen in observed:
        index = seen.line - 1
        if not visible.start.line <= index <= visible.end.line or index >= len(lines):
            continue
        text = lines[index].rstrip("\r\n")
        column = after_target(text, seen.name)
        tooltip = f"observed at step {seen.step}" if seen.step is not None else "observed during the last run"
        if len(seen.texts) > 1:
            tooltip += "; shapes seen here: " + ", ".join(seen.texts)
        if column is None:
            label, column, padding = seen.text, len(text.rstrip()), True
        else:
            label, padding = f": {seen.text}", False
        hints.append(
            types.InlayHint(
                position=types.Position(line=index, character=units(text[:column])),
                label=label,
                kind=types.InlayHintKind.Type,
                padding_left=padding,
                tooltip=tooltip,
            )
        )
    return hints


def after_target(text: str, name: str | None) -> int | None:
    """Column just after ``name`` where it is assigned on this line (``x = ...``, ``x, y = ...``), if it is."""
    if not name:
        return None
    equals = _ASSIGNMENT.search(text)
    if equals is None:
        return None
    for match in re.finditer(rf"\b{re.escape(name)}\b", text[: equals.start()]):
        return match.end()
    return None
