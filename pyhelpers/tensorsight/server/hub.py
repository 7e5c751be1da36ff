"""The runtime hub: one loopback listener per debug session that the agents in debugged processes report to.

``server`` calls ``start_session`` for the extension's ``tensorsight/startSession`` request; the extension passes the
returned address and token to the debuggee as ``TENSORSIGHT_HUB`` / ``TENSORSIGHT_TOKEN``, and every process of the
run (every rank, every forked worker) connects with ``agent/hub_client.py``. The listener binds 127.0.0.1 only and
admits a connection only when its first line is a hello carrying the session's token (compared in constant time).
Every later line is one JSON event handed to ``on_event``; a line that is not a JSON object with a ``type`` is
rejected, counted and logged, and the connection stays up. Nothing a client sends can raise out of here.

What a peer without the token can cost is bounded (any local user can connect to a loopback port): at most
``MAX_PENDING`` connections of all sessions wait for their hello (more are closed at once), a hello is one line of at
most ``MAX_HELLO`` bytes within ``HELLO_TIMEOUT`` seconds, a connection buffers at most one chunk beyond its line limit,
and what it sent reaches the log only as ``printable`` text: one line, escaped, cut short, with at most
``REJECTIONS_LOGGED_PER_SESSION`` rejections logged per session (the rest are counted).

Wire protocol (newline-delimited UTF-8 JSON, coded by ``tensorsight.core.json_lines``; declared in
``tensorsight.core.protocol``, the agent's side is ``hub_client``):
  client: ``{"type": "hello", "protocol": 1, "token", "pid", "rank"?, "script", "argv", "origin"}``
  hub:    ``{"type": "welcome", "sessionId"}``  or  ``{"type": "rejected", "reason"}`` then close
  client: one event object per line, ``{"type", "pid", "time", ...}``, until it closes.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tensorsight.core import json_lines, protocol

HOST = protocol.HUB_HOST
HELLO_TIMEOUT = protocol.HELLO_TIMEOUT_SECONDS  # seconds a new connection has to say hello
MAX_HELLO = protocol.MAX_HELLO_BYTES  # bytes of the hello line
MAX_PENDING = 64  # connections of all sessions that have not said hello yet
MAX_LINE = protocol.MAX_LINE_BYTES  # bytes of an event line; a longer line is rejected as malformed
READ_CHUNK = 1 << 16  # bytes read at a time (also the socket reader's buffer limit)
MALFORMED_LOGGED_PER_CONNECTION = 5
LINES_BETWEEN_YIELDS = 64  # a connection's lines handled before LSP requests get their turn on the loop
REJECTIONS_LOGGED_PER_SESSION = 10
LOGGED_VALUE_CHARS = 80  # of one value a peer sent (a pid, a type), once escaped
MAX_LOG_CHARS = 1024  # of one hub log line

EventHandler = Callable[[str, dict[str, Any]], None]
Logger = Callable[[str, str], None]  # (level: "info" | "warning" | "error", message)


@dataclass
class HubSession:
    """One debug session's listener and counters."""

    session_id: str
    token: str
    server: asyncio.AbstractServer | None = None
    port: int = 0
    connections: int = 0  # admitted connections (one per process)
    open_connections: int = 0
    rejected_connections: int = 0
    refused_connections: int = 0  # closed at once: too many connections already waiting for their hello
    malformed_events: int = 0
    events: int = 0
    writers: set[asyncio.StreamWriter] = field(default_factory=set)

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"


class Hub:
    """All sessions' listeners; lives on the server's event loop."""

    def __init__(self, on_event: EventHandler, log: Logger, on_change: Callable[[], None] | None = None) -> None:
        self._on_event = on_event
        self._emit_log = log
        self._on_change = on_change or (lambda: None)
        self.sessions: dict[str, HubSession] = {}
        self.pending = 0  # connections of all sessions waiting for their hello

    def _log(self, level: str, message: str) -> None:
        """Every hub line is one line, and short, whatever went into it."""
        self._emit_log(level, printable(message, MAX_LOG_CHARS))

    async def start_session(self, session_id: str) -> HubSession:
        """Open (or return the already open) listener of ``session_id`` with a fresh random token."""
        existing = self.sessions.get(session_id)
        if existing is not None:
            return existing
        session = HubSession(session_id=session_id, token=secrets.token_urlsafe(32))

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self._serve(session, reader, writer)

        session.server = await asyncio.start_server(serve, host=HOST, port=0, limit=READ_CHUNK)
        sockets = session.server.sockets or ()
        session.port = int(sockets[0].getsockname()[1]) if sockets else 0
        self.sessions[session_id] = session
        self._log("info", f"hub: session {session_id} listening on {session.address}")
        return session

    async def end_session(self, session_id: str) -> bool:
        session = self.sessions.pop(session_id, None)
        if session is None:
            return False
        if session.server is not None:
            session.server.close()
        for writer in list(session.writers):
            writer.close()
        self._log(
            "info",
            f"hub: session {session_id} ended ({session.connections} process(es), {session.events} event(s), "
            f"{session.rejected_connections} rejected connection(s), {session.refused_connections} refused while "
            f"{MAX_PENDING} waited for their hello, {session.malformed_events} malformed line(s))",
        )
        return True

    async def close(self) -> None:
        for session_id in list(self.sessions):
            await self.end_session(session_id)

    # ------------------------------------------------------------------ one connection
    async def _serve(self, session: HubSession, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.pending >= MAX_PENDING:
            session.refused_connections += 1
            if session.refused_connections == 1:
                self._log("warning", f"hub: {MAX_PENDING} connections are waiting for their hello; refusing more")
            writer.close()
            return
        session.writers.add(writer)
        lines = LineReader(reader)
        try:
            self.pending += 1
            try:
                hello = await self._admit(session, lines, writer)
            finally:
                self.pending -= 1
            if hello is None:
                return
            session.connections += 1
            session.open_connections += 1
            self._deliver(session, {k: v for k, v in hello.items() if k != "token"})
            try:
                await self._read_events(session, lines, printable(hello.get("pid")))
            finally:
                session.open_connections -= 1
                self._on_change()
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            pass  # the process went away mid-line: nothing to do
        except Exception as exc:  # noqa: BLE001 - a bug here must not take the server down
            self._log("error", f"hub: connection handler failed: {type(exc).__name__}: {printable(exc)}")
        finally:
            session.writers.discard(writer)
            writer.close()

    async def _admit(
        self, session: HubSession, lines: LineReader, writer: asyncio.StreamWriter
    ) -> dict[str, Any] | None:
        try:
            line = await asyncio.wait_for(lines.readline(MAX_HELLO), HELLO_TIMEOUT)
        except asyncio.TimeoutError:
            return self._reject(session, writer, "no hello within the time limit")
        except LineTooLong:
            return self._reject(session, writer, "hello line too long")
        hello, problem = json_lines.decode(line)
        if hello is None or hello.get("type") != protocol.HELLO:
            return self._reject(session, writer, f"first line is not a hello ({problem or 'wrong type'})")
        given = protocol.parse_payload(protocol.HelloCredentials, hello)  # admitted on the token alone
        if isinstance(given, protocol.ProtocolError) or not secrets.compare_digest(
            given.token.encode(), session.token.encode()
        ):
            # the pid as sent (unchecked, escaped by printable): the log names who tried
            return self._reject(session, writer, f"bad token from pid {printable(hello.get('pid'))}")
        writer.write(json_lines.encode(protocol.hub_answer(protocol.Welcome(sessionId=session.session_id))))
        await writer.drain()
        return hello

    def _reject(self, session: HubSession, writer: asyncio.StreamWriter, reason: str) -> dict[str, Any] | None:
        """Count, log and answer a refused connection; returns None (no hello) so callers can ``return`` it."""
        session.rejected_connections += 1
        if session.rejected_connections <= REJECTIONS_LOGGED_PER_SESSION:
            self._log("warning", f"hub: rejected a connection to session {session.session_id}: {reason}")
        elif session.rejected_connections == REJECTIONS_LOGGED_PER_SESSION + 1:
            self._log("warning", f"hub: more rejected connections to session {session.session_id}; counting only")
        try:
            writer.write(json_lines.encode(protocol.hub_answer(protocol.Rejected(reason=reason.split(" from pid")[0]))))
        except (ConnectionError, OSError):
            pass
        return None

    async def _read_events(self, session: HubSession, lines: LineReader, pid: str) -> None:
        malformed_here = 0
        handled = 0
        problem: str | None
        while True:
            handled += 1
            if handled % LINES_BETWEEN_YIELDS == 0:
                await asyncio.sleep(0)  # a burst already buffered would otherwise hold the loop until it ends
            try:
                line = await lines.readline(MAX_LINE)
            except LineTooLong:  # the rest of that line is skipped
                event, problem = None, f"line longer than {MAX_LINE} bytes"
            else:
                if not line:
                    return
                if not line.strip():
                    continue
                event, problem = json_lines.decode(line)
            if event is None:
                session.malformed_events += 1
                malformed_here += 1
                if malformed_here <= MALFORMED_LOGGED_PER_CONNECTION:
                    self._log("warning", f"hub: rejected a malformed event from pid {pid}: {problem}")
                elif malformed_here == MALFORMED_LOGGED_PER_CONNECTION + 1:
                    self._log("warning", f"hub: more malformed events from pid {pid}; no longer logging them")
                continue
            self._deliver(session, event)

    def _deliver(self, session: HubSession, event: dict[str, Any]) -> None:
        session.events += 1
        try:
            self._on_event(session.session_id, event)
        except Exception as exc:  # noqa: BLE001 - one bad event must not end the connection
            self._log("error", f"hub: event handler failed on a {printable(event.get('type'))} event: {printable(exc)}")


class LineTooLong(Exception):
    """A line longer than the limit asked for; the reader skips the rest of it."""


class LineReader:
    """Newline-delimited lines from a stream, each with a length limit chosen per call (short for the hello).

    Unlike ``StreamReader.readline`` (whose limit is fixed when the listener starts, and which may buffer twice that),
    this holds at most ``limit`` bytes plus one chunk of the current line, so a peer that never sends a newline costs
    a few KiB before its hello and about a chunk after it."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer known to hold no newline
        self._skipping = False  # inside a too long line: drop bytes up to its newline
        self._eof = False

    async def readline(self, limit: int) -> bytes:
        """The next line with its newline (the last one may lack it); b"" at the end of the stream."""
        while True:
            newline = self._buffer.find(b"\n", self._scanned)
            if newline >= 0:
                line = bytes(self._buffer[: newline + 1])
                del self._buffer[: newline + 1]
                self._scanned = 0
                if self._skipping:
                    self._skipping = False
                    continue
                if len(line) > limit + 1:
                    raise LineTooLong
                return line
            if self._skipping:
                self._buffer.clear()
            elif len(self._buffer) > limit:
                self._buffer.clear()
                self._skipping = True
                raise LineTooLong
            self._scanned = len(self._buffer)
            if self._eof:
                rest = b"" if self._skipping else bytes(self._buffer)
                self._buffer.clear()
                self._scanned = 0
                return rest
            chunk = await self._reader.read(min(READ_CHUNK, limit + 1))
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True


def printable(value: Any, limit: int = LOGGED_VALUE_CHARS) -> str:
    """``value`` as log text that cannot forge a log line: control characters (newlines included) escaped, at most
    ``limit`` characters, "..." when cut."""
    text = value if isinstance(value, str) else _short_repr(value, limit)
    escaped = "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text[: limit + 1]
    )
    return escaped[:limit] + "..." if len(escaped) > limit else escaped


def _short_repr(value: Any, limit: int) -> str:
    """repr of a value a peer sent, without building a huge text for a huge value."""
    if isinstance(value, (list, tuple, dict, set)) and len(value) > limit:
        return f"<{type(value).__name__} of {len(value)} items>"
    if isinstance(value, bytes):
        return repr(value[:limit])
    try:
        return repr(value)
    except Exception:  # noqa: BLE001 - an odd object's repr must not break logging
        return f"<{type(value).__name__}>"
