"""Findings (static rules and runtime) as LSP diagnostics, and the per-document analysis cache with its debounce.

On open/change of a Python file that uses torch, ``server`` runs ``analyze_document`` through ``analysis_process``:
in a worker thread for a file of ordinary size, in a child process for a larger one (parsing holds the GIL and big
syntax trees stay in memory, neither of which may delay the server's answers): the rules
on the document and on the project files its imports reach (a trainer class in ``trainer.py``, read from the open
buffer or, under ``source_files``' rules, from disk), kept by ``StaticAnalysis``. It then publishes ``to_diagnostic``
of each touched file's problems, the document's and the other files' (open or not): the static findings, the tools'
reports and the runs' findings, one per bug (``core.problems.one_per_bug``), each with a ``source_label`` naming who
reported it. Columns in findings count characters; ``units`` (the negotiated position encoding's counter, UTF-16
for VS Code) converts them.

Size cap: a document (or project file) of more than ``MAX_ANALYZED_LINES`` lines or ``MAX_ANALYZED_BYTES`` bytes is
not analysed; it gets one information diagnostic on its first line saying so (``too_large``). On the server's own
thread (a quick fix asked for while the analysis of the latest text is on its way, a code lens) the rules run only on
text up to ``SYNC_ANALYSIS_MAX_BYTES``; a larger document uses its last analysis meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types

from tensorsight.core import rules
from tensorsight.core.findings import Finding, shown_message
from tensorsight.core.l10n import mark, t
from tensorsight.server.runtime_view import normalize_path

SOURCE_STATIC = "TensorSight"
SOURCE_RUNTIME = "TensorSight (run)"
DEBOUNCE_SECONDS = 0.25  # after a keystroke; opening a file analyses at once
MAX_ANALYZED_LINES = 20_000  # a longer document gets no static rules (one information diagnostic says so)
MAX_ANALYZED_BYTES = 1 << 20
SYNC_ANALYSIS_MAX_BYTES = 48 << 10  # rules run on the server's thread only on text this short (about 1,500 lines)
THREAD_ANALYSIS_MAX_BYTES = 160 << 10  # up to this (about 5,000 lines: a parse of tens of ms), a worker thread
TOO_LARGE_CODE = "file-too-large"
# Who reported a problem (``core.problems.SOURCES``) and what kind of problem a code-less finding is, as Problems
# shows them ("TensorSight (rule + run)", code "dynamics"): translated; ``data`` keeps the machine names.
SOURCE_NAMES = {"rule": mark("rule"), "doctor": mark("doctor"), "run": mark("run")}
KIND_CODES = {
    "nonfinite": mark("nonfinite"),
    "shape": mark("shape"),
    "device": mark("device"),
    "leakage": mark("leakage"),
    "training-logic": mark("training-logic"),
    "memory": mark("memory"),
    "performance": mark("performance"),
    "dynamics": mark("dynamics"),
    TOO_LARGE_CODE: mark("file-too-large"),
}

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
    ``TensorSight`` for a rule alone, ``TensorSight (run)`` for a run alone, ``TensorSight (rule + doctor + run)``,
    each name in the display language ("TensorSight (regla + doctor + ejecución)"); another tool keeps its command's
    name (``profile``)."""
    if not sources or list(sources) == ["rule"]:
        return SOURCE_STATIC
    names = [t(SOURCE_NAMES[source]) if source in SOURCE_NAMES else source for source in sources]
    return f"{SOURCE_STATIC} ({' + '.join(names)})"


def shown_code(code: str) -> str:
    """The code Problems shows: a rule's (``TS101``) as it is, a finding kind's (``dynamics``) in the display
    language."""
    return t(KIND_CODES[code]) if code in KIND_CODES else code


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
    message = shown_message(finding)  # the step and rank are fields: said here, never in the producer's words
    code = details.get("code") or finding.kind
    data: dict[str, Any] = {"code": code, "kind": finding.kind, "line": finding.line}
    if "fix" in details:
        data["fix"] = details["fix"]
    return types.Diagnostic(
        range=range_,
        message=message,
        severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=shown_code(str(code)),
        source=source,
        data=data,
    )


@dataclass
class ProjectResult:
    """One open document's analysis with its project: findings per file (normalized path) and the files' lines."""

    path: str
    findings: dict[str, list[Finding]] = field(default_factory=dict)
    lines: dict[str, list[str]] = field(default_factory=dict)

    @property
    def files(self) -> set[str]:
        return set(self.lines)


def too_large(source: str) -> int | None:
    """The document's line count when it is over the cap (``MAX_ANALYZED_LINES`` / ``MAX_ANALYZED_BYTES``), else
    None. Cheap: no parse."""
    if len(source) > MAX_ANALYZED_BYTES:
        return source.count("\n") + 1
    lines = source.count("\n") + 1
    return lines if lines > MAX_ANALYZED_LINES else None


def too_large_finding(path: str, lines: int) -> Finding:
    return Finding(
        kind="performance",
        severity="info",
        message=t(
            "TensorSight's static checks skip this file: it has {0} lines, more than the {1} they analyse (or over "
            "{2} KiB). Hovers, breakpoint conditions and run findings still work.",
            lines,
            MAX_ANALYZED_LINES,
            MAX_ANALYZED_BYTES >> 10,
        ),
        file=path,
        line=1,
        details={"code": TOO_LARGE_CODE},
    )


def loops_of(source: str) -> list[tuple[int, int]]:
    """The training loops (code lenses) of a document under the size cap; [] otherwise."""
    if too_large(source) is not None or not rules.is_training_source(source):
        return []
    return rules.training_loops(source)


def analyze_document(
    source: str, path: str, read: Callable[[str], str | None], roots: Sequence[str] = ()
) -> ProjectResult:
    """The rules on an open document and on the project files its imports reach (``read`` gives their text). Blocks
    on reads: the server runs it in its analysis process (or a worker thread). A document over the size cap gets
    only ``too_large_finding``; a project file over it is not read."""
    key = normalize_path(path)
    result = ProjectResult(key, {key: []}, {key: source.splitlines(keepends=True)})
    if not rules.is_training_source(source):
        return result
    lines = too_large(source)
    if lines is not None:
        result.findings[key].append(too_large_finding(path, lines))
        return result
    texts: dict[str, str] = {}

    def remembering(file: str) -> str | None:
        text = read(file)
        if text is not None and too_large(text) is not None:
            return None
        if text is not None:
            texts[normalize_path(file)] = text
        return text

    for finding in rules.analyze_project(source, path, remembering, roots):
        result.findings.setdefault(normalize_path(finding.file), []).append(finding)
    for file in texts:  # files reached without a finding: a publish clears what an earlier analysis put there
        result.lines.setdefault(file, texts[file].splitlines(keepends=True))
        result.findings.setdefault(file, [])
    return result


class StaticAnalysis:
    """The rules' findings per open document version, each document analysed with the project files it imports.

    A file's static findings (``findings_for``) come from the open documents whose project reaches it, because they
    know its callers (an ``evaluate()`` the script calls under ``eval()``); a file no other open document reaches
    gets its own analysis. ``store`` and ``forget`` answer which files' diagnostics changed, for the server to
    publish, also files that are not open (a trainer class in another module).
    """

    def __init__(self) -> None:
        self._results: dict[str, tuple[int | None, ProjectResult]] = {}  # uri -> (version, result)

    def store(self, uri: str, version: int | None, result: ProjectResult) -> set[str]:
        """Keep ``uri``'s new analysis; the files (normalized paths) whose static findings changed with it."""
        before = self._results.get(uri)
        files = set(result.findings) | (set(before[1].findings) if before is not None else set())
        old = {file: self.findings_for(file) for file in files}
        self._results[uri] = (version, result)
        return {file for file in files if self.findings_for(file) != old[file]}

    def current(self, uri: str, version: int | None) -> bool:
        cached = self._results.get(uri)
        return cached is not None and version is not None and cached[0] == version

    def findings(self, uri: str, version: int | None, source: str, path: str, stale_ok: bool = True) -> list[Finding]:
        """The findings on the document itself: from its project analysis when that is current, else the rules on
        its text alone (no reads) when it is short (``SYNC_ANALYSIS_MAX_BYTES``), so quick fixes always match the
        text they edit. A longer document's rules never run on the server's thread: its last analysis serves
        (``stale_ok``, for diagnostics, which the editor has moved with the edits) or nothing (quick fixes)."""
        if self.current(uri, version):
            return self.findings_for(path)
        if not rules.is_training_source(source):
            return []
        if len(source) <= SYNC_ANALYSIS_MAX_BYTES:
            return rules.analyze(source, path)
        return self.findings_for(path) if stale_ok and uri in self._results else []

    def findings_for(self, path: str) -> list[Finding]:
        key = normalize_path(path)
        by_others = [r for _, r in self._results.values() if r.path != key and key in r.findings]
        sources = by_others or [r for _, r in self._results.values() if r.path == key]
        merged: dict[tuple[object, int], Finding] = {}
        for result in sources:
            for finding in result.findings.get(key, []):
                merged.setdefault((finding.details.get("code"), finding.line), finding)
        return sorted(merged.values(), key=lambda f: (f.line, str(f.details.get("code", ""))))

    def lines_of(self, path: str) -> list[str] | None:
        """The text an analysis read for ``path`` (to place diagnostics in a file that is not open)."""
        key = normalize_path(path)
        for _, result in self._results.values():
            if key in result.lines:
                return result.lines[key]
        return None

    def reaching(self, path: str) -> list[str]:
        """The open documents (uris) whose project includes ``path``, other than ``path``'s own."""
        key = normalize_path(path)
        return [uri for uri, (_, r) in self._results.items() if r.path != key and key in r.files]

    def cached(self, uri: str) -> list[Finding]:
        entry = self._results.get(uri)
        return self.findings_for(entry[1].path) if entry else []

    def forget(self, uri: str) -> set[str]:
        """Drop a closed document's analysis; the files whose static findings changed with it."""
        entry = self._results.get(uri)
        if entry is None:
            return set()
        old = {file: self.findings_for(file) for file in entry[1].findings}
        del self._results[uri]
        return {file for file, found in old.items() if self.findings_for(file) != found}
