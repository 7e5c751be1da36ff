"""``textDocument/codeLens``: the measured phase breakdown above each training loop.

``server`` answers the request with ``code_lenses``: label-only lenses (``command: ""``) above every outermost loop
that calls ``backward()`` and an optimizer step (``core.rules.training_loops``, via ``diagnostics.loops_of``), titled by
``RuntimeView.code_lenses`` (the run's breakdown, that a live run of the file waits for its first step, or a hint that
no run measured it yet).
``TrainingLoops`` caches the loops per document version, so a refresh after each run event does not re-parse the file.
"""

from __future__ import annotations

from collections.abc import Iterable

from lsprotocol import types

from tensorsight.server.diagnostics import SYNC_ANALYSIS_MAX_BYTES, loops_of
from tensorsight.server.runtime_view import RuntimeView


class TrainingLoops:
    """(first, last) 1-based line spans of the training loops of each open document, per version."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[int | None, list[tuple[int, int]]]] = {}

    def of(self, uri: str, version: int | None, source: str) -> list[tuple[int, int]]:
        """The loops of this version: cached (the analysis process stores them), else found here when the text is
        short (``SYNC_ANALYSIS_MAX_BYTES``); a longer document's last known loops serve until its analysis ends."""
        cached = self._cache.get(uri)
        if cached is not None and cached[0] == version and version is not None:
            return cached[1]
        if len(source) > SYNC_ANALYSIS_MAX_BYTES:
            return cached[1] if cached is not None else []
        loops = loops_of(source)
        self._cache[uri] = (version, loops)
        return loops

    def store(self, uri: str, version: int | None, loops: list[tuple[int, int]]) -> bool:
        """Keep the loops the analysis found for ``version``; whether they differ from the last known ones."""
        cached = self._cache.get(uri)
        self._cache[uri] = (version, loops)
        return cached is None or cached[1] != loops

    def forget(self, uri: str) -> None:
        self._cache.pop(uri, None)


def code_lenses(view: RuntimeView, path: str, loops: Iterable[tuple[int, int]]) -> list[types.CodeLens]:
    lenses = []
    for line, title in view.code_lenses(path, loops):
        position = types.Position(line=line - 1, character=0)
        lenses.append(
            types.CodeLens(
                range=types.Range(start=position, end=position), command=types.Command(title=title, command="")
            )
        )
    return lenses
