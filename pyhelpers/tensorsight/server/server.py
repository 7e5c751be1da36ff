"""Wiring of the TensorSight language server: the features, the custom methods, the hub and the GPU monitor.

Started by ``__main__`` (``python -m tensorsight.server``, stdio) from the extension. This module only connects the
parts; each LSP feature lives in its own module, which says what a user sees:
- ``diagnostics``: static rules on Python files that use torch and on the project files they import (on open at
  once, on change debounced, in the ``analysis_process`` child, so no parse holds this interpreter; files over the
  size cap get one information diagnostic instead; published for the other files too), plus the run's findings (NaN
  origin, runtime findings, diverging or hung ranks); ``code_actions``: their quick fixes;
- ``inlay_hints``, ``hover``, ``code_lens``: observed shapes, the last observed tensor, the phase breakdown;
- ``conditions``: ``tensorsight/validateCondition`` and ``tensorsight/suggestConditions``;
- here: ``tensorsight/toolFindings`` (a tool's report, e.g. the doctor's, which Problems shows merged with the rules'
  and the runs' findings: one problem per bug, ``core.problems``);
- here: ``tensorsight/startSession`` / ``endSession`` (a hub listener per debug session), the agents' events through
  ``runtime_view`` into refreshes and ``tensorsight/runEvent`` notifications, the rank verdicts (checked on each rank
  report and about once a second), and the ``tensorsight/status`` and ``tensorsight/gpu`` notifications.
Method names and payloads: ``tensorsight.core.protocol`` (and README.md in this folder).

Restricted Mode: the extension says in ``initializationOptions.trusted`` whether the workspace is trusted (absent
counts as not trusted). Untrusted, the server only reads files as text (static rules); ``startSession`` is refused,
so no hub listens and nothing from a debugged program arrives. What arrives from a debugged program is bounded:
events reach the extension in batches (``run_events``), each file's diagnostics are published at most once per
refresh (``REFRESH_SECONDS``, at most ``MAX_PUBLISHES_PER_REFRESH`` files each), and a finding's file that is not
open is read only under the rules of ``source_files``, in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from tensorsight import __version__
from tensorsight.core import l10n, protocol
from tensorsight.core.findings import Finding
from tensorsight.core.problems import finding_from_report, fold_symptoms, one_per_bug, sourced
from tensorsight.core.protocol import json_safe
from tensorsight.server import code_lens as code_lens_feature
from tensorsight.server import conditions
from tensorsight.server import hover as hover_feature
from tensorsight.server import inlay_hints as inlay_hints_feature
from tensorsight.server.analysis_process import AnalysisFailed, AnalysisProcess
from tensorsight.server.code_actions import quick_fixes
from tensorsight.server.code_lens import TrainingLoops
from tensorsight.server.diagnostics import (
    DEBOUNCE_SECONDS,
    StaticAnalysis,
    source_label,
    to_diagnostic,
)
from tensorsight.server.gpu_monitor import GpuMonitor
from tensorsight.server.hub import Hub, printable
from tensorsight.server.params import non_empty, parse_params
from tensorsight.server.run_events import RunEventBatcher
from tensorsight.server.runtime_view import RuntimeView, normalize_path
from tensorsight.server.source_files import MAX_SOURCE_BYTES, source_lines

GPU_POLL_SECONDS = 1.0
RANK_CHECK_SECONDS = 1.0  # a silent rank or a hang shows without any event arriving, so the ranks are also polled
REFRESH_SECONDS = 0.2  # coalesce bursts of runtime events into one publish / refresh
MAX_PUBLISHES_PER_REFRESH = 64  # files; the others wait for the next refresh
UNTRUSTED_CODE = -32001  # the JSON-RPC error of a request Restricted Mode refuses (server-defined range)

_LOG_LEVELS = {"info": types.MessageType.Info, "warning": types.MessageType.Warning, "error": types.MessageType.Error}


class TensorSightServer(LanguageServer):
    """The pygls server plus the state the features share."""

    def __init__(self, gpu: GpuMonitor | None = None) -> None:
        super().__init__("tensorsight", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.view = RuntimeView()
        self.hub = Hub(self.on_hub_event, self.log, self.send_status)
        self.run_events = RunEventBatcher(self._send_run_events, log=self.log)
        self.trusted = False  # until the client says otherwise in initializationOptions
        self.gpu = gpu or GpuMonitor()
        self.static = StaticAnalysis()
        self.loops = TrainingLoops()
        self.analysis = AnalysisProcess(self.log)
        self._pending_analysis: dict[str, asyncio.TimerHandle] = {}
        self._analysis_generation: dict[str, int] = {}
        self._analyses: set[asyncio.Task[None]] = set()
        self._dirty_paths: set[str] = set()
        self._refresh_hints = False
        self._refresh_lenses = False
        self._refresh_handle: asyncio.TimerHandle | None = None
        self._refreshing = False  # a refresh task is reading files or publishing
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

    def source_of(self, uri: str) -> str:
        """The open buffer's text, else the file's when ``source_files`` allows it (empty otherwise)."""
        if uri in self.workspace.text_documents:
            return self.workspace.get_text_document(uri).source
        return "".join(source_lines(to_fs_path(uri) or uri, self.source_folders()) or ())

    def source_folders(self) -> list[str]:
        """Where a file named by a run may be read from: the workspace folders and the running scripts' folders."""
        folders = self.workspace_folders()
        for session in self.view.active_sessions():
            for process in session.processes.values():
                script = process.get("script")
                if isinstance(script, str) and os.path.isabs(script):
                    folders.append(os.path.dirname(script))
        return [folder for folder in dict.fromkeys(folders) if folder]

    # ------------------------------------------------------------------ static diagnostics
    def analyze_now(self, uri: str) -> None:
        self._pending_analysis.pop(uri, None)
        self._start_analysis(uri, follow=True)

    def analyze_later(self, uri: str) -> None:
        pending = self._pending_analysis.pop(uri, None)
        if pending is not None:
            pending.cancel()
        loop = asyncio.get_running_loop()
        self._pending_analysis[uri] = loop.call_later(DEBOUNCE_SECONDS, self.analyze_now, uri)

    def _start_analysis(self, uri: str, follow: bool) -> None:
        generation = self._analysis_generation[uri] = self._analysis_generation.get(uri, 0) + 1
        task = asyncio.ensure_future(self._analyze(uri, generation, follow))
        self._analyses.add(task)
        task.add_done_callback(self._analysis_done)

    def _analysis_done(self, task: asyncio.Future[None]) -> None:
        self._analyses.discard(task)  # type: ignore[arg-type]
        if not task.cancelled() and task.exception() is not None:
            self.log("error", f"static analysis failed: {task.exception()!r}")

    async def _analyze(self, uri: str, generation: int, follow: bool) -> None:
        """The rules on an open document and its project (in a worker thread: project files are read), then a
        publish of every file whose static findings changed; with ``follow``, the other open documents whose
        project includes this file are analysed again (they read its new text)."""
        if uri not in self.workspace.text_documents:
            return
        document = self.workspace.get_text_document(uri)
        version, path = document.version, to_fs_path(uri) or uri
        if not (path.endswith(".py") or document.language_id == "python"):
            return self.publish(uri)
        buffers = {normalize_path(to_fs_path(u) or u): d.source for u, d in list(self.workspace.text_documents.items())}
        workspace = self.workspace_folders()
        folders = [*self.source_folders(), os.path.dirname(path)]

        def wanted() -> bool:
            return self._analysis_generation.get(uri) == generation and uri in self.workspace.text_documents

        try:
            answer = await self.analysis.analyze(document.source, path, buffers, folders, workspace, wanted)
        except AnalysisFailed as exc:
            self.log("warning", f"static analysis of {path} failed: {exc}")
            return
        if answer is None or not wanted():
            return  # closed, or a newer analysis of it started
        if self.workspace.get_text_document(uri).version != version:
            return  # changed meanwhile: its debounced analysis is on the way
        result, loops = answer
        if self.loops.store(uri, version, loops):
            capabilities = self.client_capabilities.workspace
            if capabilities and capabilities.code_lens and capabilities.code_lens.refresh_support:
                self.workspace_code_lens_refresh(None)
        touched = self.static.store(uri, version, result)
        self.publish(uri)
        self.publish_files(touched - {normalize_path(path)})
        if follow:
            for other in self.static.reaching(path):
                if other != uri and other in self.workspace.text_documents:
                    self._start_analysis(other, follow=False)

    def publish_files(self, paths: set[str]) -> None:
        for file in sorted(paths):
            self.publish(self.open_uri_for(file) or from_fs_path(file) or file)

    def workspace_folders(self) -> list[str]:
        folders = [to_fs_path(folder.uri) for folder in self.workspace.folders.values()]
        if self.workspace.root_path:
            folders.append(self.workspace.root_path)
        return [folder for folder in dict.fromkeys(folders) if folder]

    def forget(self, uri: str) -> set[str]:
        """A closed document: drop its pending analysis and caches; the other files whose static findings changed."""
        pending = self._pending_analysis.pop(uri, None)
        if pending is not None:
            pending.cancel()
        self._analysis_generation.pop(uri, None)
        touched = self.static.forget(uri)
        self.loops.forget(uri)
        if not any(u != uri for u in self.workspace.text_documents):  # the last one: the analysis child's memory goes
            task = asyncio.ensure_future(self.analysis.close())
            self._analyses.add(task)
            task.add_done_callback(self._analysis_done)
        path = to_fs_path(uri) or uri
        return touched - {normalize_path(path)}

    def static_findings(self, uri: str, stale_ok: bool = True) -> list[Finding]:
        document = self.workspace.get_text_document(uri)
        path = to_fs_path(uri) or uri
        if not (path.endswith(".py") or document.language_id == "python"):
            return []
        return self.static.findings(uri, document.version, document.source, path, stale_ok)

    def publish(self, uri: str, file_lines: Sequence[str] | None = None) -> None:
        """Static findings (of an open document, or those other open documents' projects found in this file) plus
        the run's findings for its file. For a file that is not open, ``file_lines`` (read by the caller, off the
        event loop) or the text the static analysis read places them; without, they go on the line's start."""
        path = to_fs_path(uri) or uri
        found: list[tuple[str, Finding]] = []
        if uri in self.workspace.text_documents:
            lines = self.workspace.get_text_document(uri).lines
            found += sourced("rule", self.static_findings(uri))
        else:
            lines = file_lines or self.static.lines_of(path) or []
            found += sourced("rule", self.static.findings_for(path))
        # a flat loss whose cause a finding names (in any file of the run, or a rule here) is not a second problem
        causes = [*self.view.every_finding(), *(f for _, f in found)]
        found += self.view.reported(path) + sourced("run", fold_symptoms(self.view.diagnostics(path), causes))
        diagnostics = [to_diagnostic(p.finding, lines, source_label(p.sources), self.units) for p in one_per_bug(found)]
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))

    def record_report(self, tool: str, reported: Sequence[protocol.ReportedFinding]) -> int:
        """A tool's report (``tensorsight/toolFindings``): kept, merged into Problems at the next refresh. A finding
        the shared model refuses (an unknown kind, a line before 1) is dropped."""
        findings = [f for f in (finding_from_report(asdict(r)) for r in reported) if f is not None]
        self._dirty_paths |= self.view.record_report(tool, findings)
        self._schedule_refresh()
        return len(findings)

    def training_loops(self, uri: str) -> list[tuple[int, int]]:
        document = self.workspace.get_text_document(uri)
        return self.loops.of(uri, document.version, document.source)

    # ------------------------------------------------------------------ runtime hub
    def on_hub_event(self, session_id: str, event: dict[str, Any]) -> None:
        update = self.view.apply(session_id, event)
        if update.error is not None:
            pid, error = printable(event.get("pid")), printable(update.error, 300)
            self.log("warning", f"hub: rejected an event from pid {pid}: {error}")
            return
        if event.get("type") in protocol.FORWARDED_EVENT_TYPES:
            self.run_events.add(session_id, event)
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
            made = protocol.FindingEvent(
                finding=finding.to_dict(), time=time.time(), origin="server", rank=finding.rank
            )
            self.run_events.add(session_id, protocol.wire_event(made))
        if check.changed:
            ranks = protocol.RanksEvent(verdicts=check.verdicts, time=time.time())
            self.run_events.add(session_id, protocol.wire_event(ranks))
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

    def _send_run_events(self, session_id: str, events: list[dict[str, Any]]) -> None:
        self.notify(protocol.RUN_EVENT, {"sessionId": session_id, "events": events})

    def _schedule_refresh(self) -> None:
        if self._refresh_handle is None and not self._refreshing:
            self._refresh_handle = asyncio.get_running_loop().call_later(REFRESH_SECONDS, self._start_refresh)

    def _start_refresh(self) -> None:
        self._refresh_handle = None
        self._refreshing = True
        task = asyncio.ensure_future(self._refresh())
        task.add_done_callback(self._refresh_done)

    def _refresh_done(self, task: asyncio.Future[None]) -> None:
        self._refreshing = False
        if not task.cancelled() and task.exception() is not None:
            self.log("error", f"refresh failed: {task.exception()!r}")
        if self._dirty_paths or self._refresh_hints or self._refresh_lenses:
            self._schedule_refresh()

    async def _refresh(self) -> None:
        """Publish the files a run changed (a bounded number per refresh) and ask for hint and lens refreshes."""
        hints, lenses = self._refresh_hints, self._refresh_lenses
        self._refresh_hints = self._refresh_lenses = False
        ordered = sorted(self._dirty_paths)
        batch = ordered[:MAX_PUBLISHES_PER_REFRESH]
        self._dirty_paths = set(ordered[MAX_PUBLISHES_PER_REFRESH:])
        uris = {path: self.open_uri_for(path) or from_fs_path(path) or path for path in batch}
        closed = [path for path, uri in uris.items() if uri not in self.workspace.text_documents]
        folders = self.source_folders()
        read = await asyncio.to_thread(lambda: {path: source_lines(path, folders, MAX_SOURCE_BYTES) for path in closed})
        for path, uri in uris.items():
            self.publish(uri, read.get(path))
        capabilities = self.client_capabilities.workspace
        if hints and capabilities and capabilities.inlay_hint and capabilities.inlay_hint.refresh_support:
            self.workspace_inlay_hint_refresh(None)
        if lenses and capabilities and capabilities.code_lens and capabilities.code_lens.refresh_support:
            self.workspace_code_lens_refresh(None)

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
        self.notify(protocol.STATUS, status)

    async def start_session(self, session_id: str) -> dict[str, str]:
        if not self.trusted:
            raise JsonRpcException(
                code=UNTRUSTED_CODE,
                message="the workspace is not trusted: TensorSight starts no debug session (Restricted Mode)",
            )
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
        self.run_events.forget(session_id)
        ended = await self.hub.end_session(session_id)
        ended = self.view.end_session(session_id) or ended
        self._refresh_lenses = True  # a lens waiting for this session's first step goes back to its hint
        self._schedule_refresh()
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
            self.notify(protocol.GPU, snapshot)
        self._last_gpu = snapshot


server = TensorSightServer()


# ---------------------------------------------------------------------------------------------- LSP features
@server.feature(types.INITIALIZE)
def initialize(ls: TensorSightServer, params: types.InitializeParams) -> None:
    options = params.initialization_options
    ls.trusted = isinstance(options, dict) and options.get("trusted") is True
    # the editor's display language (vscode-languageclient sends vscode.env.language): diagnostics, code lenses and
    # hovers are written in it; a client that sends none leaves the environment's (protocol.ENV_LOCALE) or English
    l10n.set_language(params.locale or os.environ.get(protocol.ENV_LOCALE))


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
    touched = ls.forget(uri)
    ls.publish(uri)  # what stays: the run's findings, and what other open scripts' projects find in this file
    ls.publish_files(touched)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix], resolve_provider=False),
)
def code_action(ls: TensorSightServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    document = ls.workspace.get_text_document(uri)
    return quick_fixes(
        uri, ls.static_findings(uri, stale_ok=False), document.lines, params.range, params.context.diagnostics, ls.units
    )


@server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))
def inlay_hint(ls: TensorSightServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    path = to_fs_path(params.text_document.uri)
    if not path:
        return []
    lines = ls.workspace.get_text_document(params.text_document.uri).lines
    return inlay_hints_feature.inlay_hints(ls.view.inlay_hints(path), lines, params.range, ls.units)


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: TensorSightServer, params: types.HoverParams) -> types.Hover | None:
    path = to_fs_path(params.text_document.uri)
    if not path:
        return None
    document = ls.workspace.get_text_document(params.text_document.uri)
    return hover_feature.hover(ls.view, path, document, params.position)


@server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
def code_lens(ls: TensorSightServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    uri = params.text_document.uri
    path = to_fs_path(uri)
    if not path:
        return []
    return code_lens_feature.code_lenses(ls.view, path, ls.training_loops(uri))


@server.feature(types.SHUTDOWN)
async def shutdown(ls: TensorSightServer, params: None) -> None:
    await ls.hub.close()
    ls.analysis.kill()
    ls.gpu.close()


# ---------------------------------------------------------------------------------------------- custom methods
@server.feature(protocol.START_SESSION)
async def start_session(ls: TensorSightServer, params: Any) -> dict[str, str]:
    given = parse_params(protocol.StartSessionParams, params)
    return await ls.start_session(non_empty(given.sessionId, "sessionId"))


@server.feature(protocol.END_SESSION)
async def end_session(ls: TensorSightServer, params: Any) -> dict[str, bool]:
    given = parse_params(protocol.EndSessionParams, params)
    return {"ended": await ls.end_session(non_empty(given.sessionId, "sessionId"))}


@server.feature(protocol.TOOL_FINDINGS)
def tool_findings(ls: TensorSightServer, params: Any) -> dict[str, int]:
    given = parse_params(protocol.ToolFindingsParams, params)  # a malformed finding is dropped, not the report
    return {"accepted": ls.record_report(non_empty(given.tool, "tool"), given.findings)}


@server.feature(protocol.VALIDATE_CONDITION)
def validate_condition(ls: TensorSightServer, params: Any) -> dict[str, Any]:
    return conditions.validate_condition(params, ls.source_of)


@server.feature(protocol.SUGGEST_CONDITIONS)
def suggest_conditions(ls: TensorSightServer, params: Any) -> list[Any]:
    return conditions.suggest_conditions(params, ls.view, to_fs_path, ls.source_of)


def main() -> None:
    logging.basicConfig(level=os.environ.get(protocol.ENV_LOG_LEVEL, "WARNING"))
    server.start_io()
