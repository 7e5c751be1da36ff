"""Wiring of the TensorSight language server: LSP features, custom methods, the hub and the GPU monitor.

Started by ``__main__`` (``python -m tensorsight.server``, stdio) from the extension. What a user sees:
- diagnostics with rule codes on Python files that use torch (static rules, on open at once, on change debounced),
  and quick fixes for them;
- during and after a debug run, from the agents' events: observed shapes as inlay hints at assignment lines, the NaN
  origin and runtime findings as diagnostics, the last observed tensor on hover, the phase breakdown as a code lens
  above the training loop;
- for a distributed run, each rank's verdict (running, stopped, waiting for a stopped rank, hung, silent), checked on
  each rank report and about once a second, and a diverging or hung rank as a finding;
- custom notifications for the extension's training panel and status bar (runs, GPU, hub state).
Method names and payloads: ``methods.py`` and README.md in this folder.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import re
import time
from collections.abc import Sequence
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from tensorsight import __version__
from tensorsight.core import rules
from tensorsight.server import methods
from tensorsight.server.code_actions import quick_fixes
from tensorsight.server.diagnostics import (
    DEBOUNCE_SECONDS,
    SOURCE_RUNTIME,
    SOURCE_STATIC,
    StaticAnalysis,
    to_diagnostic,
)
from tensorsight.server.gpu_monitor import GpuMonitor
from tensorsight.server.hub import Hub
from tensorsight.server.runtime_view import RuntimeView, json_safe, normalize_path

GPU_POLL_SECONDS = 1.0
RANK_CHECK_SECONDS = 1.0  # a silent rank or a hang shows without any event arriving, so the ranks are also polled
REFRESH_SECONDS = 0.2  # coalesce bursts of runtime events into one publish / refresh

_LOG_LEVELS = {"info": types.MessageType.Info, "warning": types.MessageType.Warning, "error": types.MessageType.Error}
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class TensorSightServer(LanguageServer):
    """The pygls server plus the state the features share."""

    def __init__(self, gpu: GpuMonitor | None = None) -> None:
        super().__init__("tensorsight", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.view = RuntimeView()
        self.hub = Hub(self.on_hub_event, self.log, self.send_status)
        self.gpu = gpu or GpuMonitor()
        self.static = StaticAnalysis()
        self._loops: dict[str, tuple[int | None, list[tuple[int, int]]]] = {}
        self._pending_analysis: dict[str, asyncio.TimerHandle] = {}
        self._dirty_paths: set[str] = set()
        self._refresh_hints = False
        self._refresh_lenses = False
        self._refresh_handle: asyncio.TimerHandle | None = None
        self._gpu_task: asyncio.Task[None] | None = None
        self._ranks_task: asyncio.Task[None] | None = None
        self._last_gpu: dict[str, Any] | None = None

    # ------------------------------------------------------------------ plumbing
    def log(self, level: str, message: str) -> None:
        """window/logMessage (the extension's output channel)."""
        try:
            self.window_log_message(
                types.LogMessageParams(type=_LOG_LEVELS.get(level, types.MessageType.Log), message=message)
            )
        except Exception:  # noqa: BLE001 - no transport (tests, shutdown): stderr is the fallback
            logging.getLogger(__name__).log(logging.WARNING, message)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.protocol.notify(method, json_safe(params))

    def units(self, text: str) -> int:
        return int(self.workspace.position_codec.client_num_units(text))

    def open_uri_for(self, path: str) -> str | None:
        key = normalize_path(path)
        for uri in list(self.workspace.text_documents):
            fs_path = to_fs_path(uri)
            if fs_path and normalize_path(fs_path) == key:
                return uri
        return None

    # ------------------------------------------------------------------ static diagnostics
    def analyze_now(self, uri: str) -> None:
        self._pending_analysis.pop(uri, None)
        self.publish(uri)

    def analyze_later(self, uri: str) -> None:
        pending = self._pending_analysis.pop(uri, None)
        if pending is not None:
            pending.cancel()
        loop = asyncio.get_running_loop()
        self._pending_analysis[uri] = loop.call_later(DEBOUNCE_SECONDS, self.analyze_now, uri)

    def static_findings(self, uri: str) -> list[Any]:
        document = self.workspace.get_text_document(uri)
        path = to_fs_path(uri) or uri
        if not (path.endswith(".py") or document.language_id == "python"):
            return []
        return self.static.findings(uri, document.version, document.source, path)

    def publish(self, uri: str) -> None:
        """Static findings of an open document plus the run's findings for its file."""
        path = to_fs_path(uri) or uri
        diagnostics: list[types.Diagnostic] = []
        if uri in self.workspace.text_documents:
            document = self.workspace.get_text_document(uri)
            lines = document.lines
            diagnostics += [to_diagnostic(f, lines, SOURCE_STATIC, self.units) for f in self.static_findings(uri)]
        else:
            lines = _read_lines(path)
        diagnostics += [to_diagnostic(f, lines, SOURCE_RUNTIME, self.units) for f in self.view.diagnostics(path)]
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))

    def training_loops(self, uri: str) -> list[tuple[int, int]]:
        document = self.workspace.get_text_document(uri)
        cached = self._loops.get(uri)
        if cached is not None and cached[0] == document.version and document.version is not None:
            return cached[1]
        loops = rules.training_loops(document.source) if rules.is_training_source(document.source) else []
        self._loops[uri] = (document.version, loops)
        return loops

    # ------------------------------------------------------------------ runtime hub
    def on_hub_event(self, session_id: str, event: dict[str, Any]) -> None:
        update = self.view.apply(session_id, event)
        if update.error is not None:
            self.log("warning", f"hub: rejected an event from pid {event.get('pid')}: {update.error}")
            return
        if event.get("type") in methods.FORWARDED_EVENT_TYPES:
            self.notify(methods.RUN_EVENT, {"sessionId": session_id, "event": event})
        self._dirty_paths |= update.diagnostics
        self._refresh_hints = self._refresh_hints or bool(update.hints)
        self._refresh_lenses = self._refresh_lenses or update.lenses
        if update.diagnostics or update.hints or update.lenses:
            self._schedule_refresh()
        if update.status:
            self.send_status()
        if update.ranks:
            self.check_ranks(session_id)

    def check_ranks(self, session_id: str) -> None:
        """Announce the session's rank verdicts when they changed, and new cross-rank findings (divergence, hang)."""
        check = self.view.check_ranks(session_id, time.time())
        for finding in check.findings:
            event = {"type": "finding", "finding": finding.to_dict(), "time": time.time(), "origin": "server"}
            if finding.rank is not None:
                event["rank"] = finding.rank
            self.notify(methods.RUN_EVENT, {"sessionId": session_id, "event": event})
        if check.changed:
            event = {"type": "ranks", "verdicts": check.verdicts, "time": time.time()}
            self.notify(methods.RUN_EVENT, {"sessionId": session_id, "event": event})
        if check.diagnostics:
            self._dirty_paths |= check.diagnostics
            self._schedule_refresh()
        if check.status:
            self.send_status()

    async def _poll_ranks(self) -> None:
        """About once a second while a session is live: verdicts age (waiting turns hung, a quiet rank silent)."""
        while self.view.active_sessions():
            for session in self.view.active_sessions():
                try:
                    self.check_ranks(session.session_id)
                except Exception as exc:  # noqa: BLE001 - a bug here must not stop the poll or the server
                    self.log("error", f"ranks: check of session {session.session_id} failed: {exc!r}")
            await asyncio.sleep(RANK_CHECK_SECONDS)

    def _schedule_refresh(self) -> None:
        if self._refresh_handle is None:
            self._refresh_handle = asyncio.get_running_loop().call_later(REFRESH_SECONDS, self._refresh)

    def _refresh(self) -> None:
        self._refresh_handle = None
        dirty, self._dirty_paths = self._dirty_paths, set()
        for path in sorted(dirty):
            self.publish(self.open_uri_for(path) or from_fs_path(path) or path)
        capabilities = self.client_capabilities.workspace
        if self._refresh_hints and capabilities and capabilities.inlay_hint and capabilities.inlay_hint.refresh_support:
            self.workspace_inlay_hint_refresh(None)
        if self._refresh_lenses and capabilities and capabilities.code_lens and capabilities.code_lens.refresh_support:
            self.workspace_code_lens_refresh(None)
        self._refresh_hints = self._refresh_lenses = False

    def send_status(self) -> None:
        status = self.view.status()
        for detail in status["details"]:
            session = self.hub.sessions.get(detail["sessionId"])
            if session is not None:
                detail.update(
                    address=session.address,
                    connections=session.open_connections,
                    rejectedConnections=session.rejected_connections,
                    malformedEvents=session.malformed_events,
                )
        self.notify(methods.STATUS, status)

    async def start_session(self, session_id: str) -> dict[str, str]:
        touched = self.view.start_session(session_id)
        session = await self.hub.start_session(session_id)
        self._dirty_paths |= touched
        self._refresh_hints = self._refresh_lenses = True
        self._schedule_refresh()
        self.send_status()
        if self._gpu_task is None or self._gpu_task.done():
            self._gpu_task = asyncio.ensure_future(self._poll_gpu())
        if self._ranks_task is None or self._ranks_task.done():
            self._ranks_task = asyncio.ensure_future(self._poll_ranks())
        return {"address": session.address, "token": session.token}

    async def end_session(self, session_id: str) -> bool:
        ended = await self.hub.end_session(session_id)
        ended = self.view.end_session(session_id) or ended
        self.send_status()
        return ended

    # ------------------------------------------------------------------ GPU
    async def _poll_gpu(self) -> None:
        """About once a second while a session is live; an unavailable GPU is announced once, not every second."""
        while self.view.active_sessions():
            await self.send_gpu()
            await asyncio.sleep(GPU_POLL_SECONDS)

    async def send_gpu(self, force: bool = False) -> None:
        pids = [pid for s in self.view.active_sessions() for pid in s.processes]
        snapshot = await asyncio.to_thread(self.gpu.snapshot, pids)
        if force or snapshot.get("available") or snapshot != self._last_gpu:
            self.notify(methods.GPU, snapshot)
        self._last_gpu = snapshot


server = TensorSightServer()


# ---------------------------------------------------------------------------------------------- LSP features
@server.feature(types.INITIALIZED)
async def initialized(ls: TensorSightServer, params: types.InitializedParams) -> None:
    ls.send_status()
    await ls.send_gpu(force=True)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: TensorSightServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.analyze_now(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: TensorSightServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.analyze_later(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: TensorSightServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    pending = ls._pending_analysis.pop(uri, None)
    if pending is not None:
        pending.cancel()
    ls.static.forget(uri)
    ls._loops.pop(uri, None)
    ls.publish(uri)  # what stays is the run's findings for the file (none: the list is cleared)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix], resolve_provider=False),
)
def code_action(ls: TensorSightServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    document = ls.workspace.get_text_document(uri)
    return quick_fixes(uri, ls.static_findings(uri), document.lines, params.range, params.context.diagnostics, ls.units)


@server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))
def inlay_hint(ls: TensorSightServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    uri = params.text_document.uri
    path = to_fs_path(uri)
    if not path:
        return []
    lines = ls.workspace.get_text_document(uri).lines
    hints = []
    for seen in ls.view.inlay_hints(path):
        index = seen.line - 1
        if not params.range.start.line <= index <= params.range.end.line or index >= len(lines):
            continue
        text = lines[index].rstrip("\r\n")
        column = _after_target(text, seen.name)
        tooltip = f"observed at step {seen.step}" if seen.step is not None else "observed during the last run"
        if len(seen.texts) > 1:
            tooltip += "; shapes seen here: " + ", ".join(seen.texts)
        if column is None:
            label, column, padding = seen.text, len(text.rstrip()), True
        else:
            label, padding = f": {seen.text}", False
        hints.append(
            types.InlayHint(
                position=types.Position(line=index, character=ls.units(text[:column])),
                label=label,
                kind=types.InlayHintKind.Type,
                padding_left=padding,
                tooltip=tooltip,
            )
        )
    return hints


def _after_target(text: str, name: str | None) -> int | None:
    """Column just after ``name`` where it is assigned on this line (``x = ...``, ``x, y = ...``), if it is."""
    if not name:
        return None
    equals = re.search(r"(?<![=!<>+\-*/%&|^@:])=(?!=)", text)
    if equals is None:
        return None
    for match in re.finditer(rf"\b{re.escape(name)}\b", text[: equals.start()]):
        return match.end()
    return None


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: TensorSightServer, params: types.HoverParams) -> types.Hover | None:
    uri = params.text_document.uri
    path = to_fs_path(uri)
    if not path:
        return None
    document = ls.workspace.get_text_document(uri)
    word = document.word_at_position(params.position) or None
    if word is not None and not _IDENTIFIER.fullmatch(word):
        word = None
    text = ls.view.hover(path, params.position.line + 1, word)
    if text is None:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))


@server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
def code_lens(ls: TensorSightServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    uri = params.text_document.uri
    path = to_fs_path(uri)
    if not path:
        return []
    lenses = []
    for line, title in ls.view.code_lenses(path, ls.training_loops(uri)):
        position = types.Position(line=line - 1, character=0)
        lenses.append(
            types.CodeLens(
                range=types.Range(start=position, end=position), command=types.Command(title=title, command="")
            )
        )
    return lenses


@server.feature(types.SHUTDOWN)
async def shutdown(ls: TensorSightServer, params: None) -> None:
    await ls.hub.close()
    ls.gpu.close()


# ---------------------------------------------------------------------------------------------- custom methods
@server.feature(methods.START_SESSION)
async def start_session(ls: TensorSightServer, params: Any) -> dict[str, str]:
    session_id = _required_str(params, "sessionId")
    return await ls.start_session(session_id)


@server.feature(methods.END_SESSION)
async def end_session(ls: TensorSightServer, params: Any) -> dict[str, bool]:
    session_id = _required_str(params, "sessionId")
    return {"ended": await ls.end_session(session_id)}


@server.feature(methods.VALIDATE_CONDITION)
def validate_condition(ls: TensorSightServer, params: Any) -> dict[str, Any]:
    """Names a breakpoint condition uses that are not defined at that line (debugpy would silently never stop)."""
    uri = _required_str(params, "uri")
    condition = _required_str(params, "condition")
    line = as_dict(params).get("line")
    if isinstance(line, bool) or not isinstance(line, int) or line < 0:
        raise JsonRpcInvalidParams("'line' must be a 0-based line number")
    conditions = _conditions_module()
    if conditions is None:
        return {"undefinedNames": [], "message": "", "syntaxError": None, "available": False}
    if uri in ls.workspace.text_documents:
        source = ls.workspace.get_text_document(uri).source
    else:
        source = "".join(_read_lines(to_fs_path(uri) or uri))
    if hasattr(conditions, "validate_condition"):
        answer = dict(conditions.validate_condition(source, line + 1, condition))
    else:
        names = list(dict.fromkeys(str(n) for n in conditions.undefined_names(source, line + 1, condition)))
        message = f"not defined at line {line + 1}: {', '.join(names)}" if names else ""
        answer = {"undefinedNames": names, "message": message, "syntaxError": None}
    return {**json_safe(answer), "available": True}


@server.feature(methods.SUGGEST_CONDITIONS)
def suggest_conditions(ls: TensorSightServer, params: Any) -> list[Any]:
    """Conditions for the quick pick (``[{label, condition, description}]``); the shape observed at run time for
    that name (when ``uri`` and 0-based ``line`` are given and a run saw it) sharpens the suggestions."""
    name = _required_str(params, "name")
    conditions = _conditions_module()
    if conditions is None:
        return []
    given = as_dict(params)
    kind_hint = given.get("kindHint") if isinstance(given.get("kindHint"), str) else None
    shape = given.get("shape") if isinstance(given.get("shape"), list) else None
    uri, line = given.get("uri"), given.get("line")
    if shape is None and isinstance(uri, str) and isinstance(line, int) and (path := to_fs_path(uri)):
        seen = [s for s in ls.view.inlay_hints(path) if s.line == line + 1 and s.name == name]
        if seen and seen[-1].shape is not None:
            shape = list(seen[-1].shape)
    try:
        suggestions = conditions.suggest_conditions(name, kind_hint, shape)
    except TypeError:  # an older helper that takes the name only
        suggestions = conditions.suggest_conditions(name)
    return list(json_safe(list(suggestions)))


def _conditions_module() -> Any | None:
    """``tensorsight.core.conditions`` (the breakpoint feature's pure helpers), or None in a build without it."""
    try:
        return importlib.import_module("tensorsight.core.conditions")
    except ImportError:
        return None


def as_dict(params: Any) -> dict[str, Any]:
    """Custom-method params arrive as pygls namedtuples; plain dicts are easier to check."""
    if params is None:
        return {}
    if isinstance(params, dict):
        return params
    if hasattr(params, "_asdict"):
        return {k: _plain(v) for k, v in params._asdict().items()}
    raise JsonRpcInvalidParams("params must be an object")


def _plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _required_str(params: Any, key: str) -> str:
    value = as_dict(params).get(key)
    if not isinstance(value, str) or not value:
        raise JsonRpcInvalidParams(f"'{key}' must be a non-empty string")
    return value


def _read_lines(path: str) -> Sequence[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.readlines()
    except OSError:
        return []


def main() -> None:
    logging.basicConfig(level=os.environ.get("TENSORSIGHT_LOG_LEVEL", "WARNING"))
    server.start_io()
