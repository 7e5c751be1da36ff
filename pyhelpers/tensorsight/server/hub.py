"""The runtime hub: one loopback listener per debug session that the agents in debugged processes report to.

``server`` calls ``start_session`` for the extension's ``tensorsight/startSession`` request; the extension passes the
returned address and token to the debuggee as ``TENSORSIGHT_HUB`` / ``TENSORSIGHT_TOKEN``, and every process of the
run (every rank, every forked worker) connects with ``agent/hub_client.py``. The listener binds 127.0.0.1 only and
admits a connection only when its first line is a hello carrying the session's token (compared in constant time).
Every later line is one JSON event handed to ``on_event``; a line that is not a JSON object with a ``type`` is
rejected, counted and logged, and the connection stays up. Nothing a client sends can raise out of here.

Wire protocol (newline-delimited UTF-8 JSON; declared in ``tensorsight.core.protocol``, the agent's side is
``hub_client``):
  client: ``{"type": "hello", "protocol": 1, "token", "pid", "rank"?, "script", "argv", "origin"}``
  hub:    ``{"type": "welcome", "sessionId"}``  or  ``{"type": "rejected", "reason"}`` then close
  client: one event object per line, ``{"type", "pid", "time", ...}``, until it closes.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tensorsight.core import protocol

HOST = protocol.HUB_HOST
HELLO_TIMEOUT = protocol.HELLO_TIMEOUT_SECONDS  # seconds a new connection has to say hello
MAX_LINE = protocol.MAX_LINE_BYTES  # bytes; a longer line is rejected as malformed
MALFORMED_LOGGED_PER_CONNECTION = 5

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
        self._log = log
        self._on_change = on_change or (lambda: None)
        self.sessions: dict[str, HubSession] = {}

    async def start_session(self, session_id: str) -> HubSession:
        """Open (or return the already open) listener of ``session_id`` with a fresh random token."""
        existing = self.sessions.get(session_id)
        if existing is not None:
            return existing
        session = HubSession(session_id=session_id, token=secrets.token_urlsafe(32))

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self._serve(session, reader, writer)

        session.server = await asyncio.start_server(serve, host=HOST, port=0, limit=MAX_LINE)
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
            f"{session.rejected_connections} rejected connection(s), {session.malformed_events} malformed line(s))",
        )
        return True

    async def close(self) -> None:
        for session_id in list(self.sessions):
            await self.end_session(session_id)

    # ------------------------------------------------------------------ one connection
    async def _serve(self, session: HubSession, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session.writers.add(writer)
        try:
            hello = await self._admit(session, reader, writer)
            if hello is None:
                return
            session.connections += 1
            session.open_connections += 1
            self._deliver(session, {k: v for k, v in hello.items() if k != "token"})
            try:
                await self._read_events(session, reader, hello.get("pid"))
            finally:
                session.open_connections -= 1
                self._on_change()
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            pass  # the process went away mid-line: nothing to do
        except Exception as exc:  # noqa: BLE001 - a bug here must not take the server down
            self._log("error", f"hub: connection handler failed: {type(exc).__name__}: {exc}")
        finally:
            session.writers.discard(writer)
            writer.close()

    async def _admit(
        self, session: HubSession, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> dict[str, Any] | None:
        try:
            line = await asyncio.wait_for(reader.readline(), HELLO_TIMEOUT)
        except asyncio.TimeoutError:
            return self._reject(session, writer, "no hello within the time limit")
        except ValueError:
            return self._reject(session, writer, "hello line too long")
        hello, problem = parse_line(line)
        if hello is None or hello.get("type") != protocol.HELLO:
            return self._reject(session, writer, f"first line is not a hello ({problem or 'wrong type'})")
        token = hello.get("token")
        if not isinstance(token, str) or not secrets.compare_digest(token.encode(), session.token.encode()):
            return self._reject(session, writer, f"bad token from pid {hello.get('pid')}")
        writer.write(_line({"type": protocol.WELCOME, "sessionId": session.session_id}))
        await writer.drain()
        return hello

    def _reject(self, session: HubSession, writer: asyncio.StreamWriter, reason: str) -> dict[str, Any] | None:
        """Count, log and answer a refused connection; returns None (no hello) so callers can ``return`` it."""
        session.rejected_connections += 1
        self._log("warning", f"hub: rejected a connection to session {session.session_id}: {reason}")
        try:
            writer.write(_line({"type": protocol.REJECTED, "reason": reason.split(" from pid")[0]}))
        except (ConnectionError, OSError):
            pass
        return None

    async def _read_events(self, session: HubSession, reader: asyncio.StreamReader, pid: Any) -> None:
        malformed_here = 0
        problem: str | None
        while True:
            try:
                line = await reader.readline()
            except ValueError:  # longer than MAX_LINE: asyncio dropped it
                event, problem = None, f"line longer than {MAX_LINE} bytes"
            else:
                if not line:
                    return
                if not line.strip():
                    continue
                event, problem = parse_line(line)
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
            self._log("error", f"hub: event handler failed on a {event.get('type')} event: {exc!r}")


def parse_line(line: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """(event, None) for a JSON object with a non-empty string ``type``; (None, reason) otherwise."""
    try:
        value = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "not UTF-8"
    except ValueError as exc:
        return None, f"not JSON ({exc.args[0] if exc.args else exc})"
    except RecursionError:
        return None, "JSON nested too deeply"
    if not isinstance(value, dict):
        return None, f"a JSON {type(value).__name__}, not an object"
    kind = value.get("type")
    if not isinstance(kind, str) or not kind or len(kind) > protocol.MAX_TYPE_LENGTH:
        return None, "no 'type'"
    return value, None


def _line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message) + "\n").encode("utf-8")
