"""``textDocument/hover``: the last tensor a run observed for the name under the cursor, and a NaN/Inf origin.

``server`` answers the request with ``hover``; the Markdown itself comes from ``RuntimeView.hover`` (pure). This
module picks the word under the cursor (identifiers only: a hover on an operator asks for the whole line).
"""

from __future__ import annotations

import re

from lsprotocol import types
from pygls.workspace import TextDocument

from tensorsight.server.runtime_view import RuntimeView

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def hover(view: RuntimeView, path: str, document: TextDocument, position: types.Position) -> types.Hover | None:
    """Markdown hover at ``position`` of ``document`` (whose file is ``path``), or None when the run saw nothing."""
    word = document.word_at_position(position) or None
    if word is not None and not _IDENTIFIER.fullmatch(word):
        word = None
    text = view.hover(path, position.line + 1, word)
    if text is None:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))
