"""The language server's real runtime hub (``tensorsight.server.hub``) on its own event loop in the test process,
recording every event a session's agents send: for the DAP tests whose debuggee must reach the editor's hub (the
distributed ranks, an editor attaching to a waiting ``tensorsight watch`` run)."""

from __future__ import annotations

import asyncio
import threading

from tensorsight.server.hub import Hub


class RunningHub:
    """One hub with one session (``session_id``); ``env()`` is what a launch gives the debuggee."""

    def __init__(self, session_id: str = "ddp") -> None:
        self.events: list[dict] = []
        self.log: list[str] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="test-hub", daemon=True)
        self._thread.start()
        self.hub = Hub(on_event=self._record, log=lambda level, message: self.log.append(f"{level}: {message}"))
        self.session = asyncio.run_coroutine_threadsafe(self.hub.start_session(session_id), self._loop).result(30)

    def _record(self, session_id: str, event: dict) -> None:
        with self._lock:
            self.events.append(event)

    def env(self) -> dict[str, str]:
        return {"TENSORSIGHT_HUB": self.session.address, "TENSORSIGHT_TOKEN": self.session.token}

    def snapshot(self, event_type: str | None = None) -> list[dict]:
        with self._lock:
            return [e for e in self.events if event_type is None or e.get("type") == event_type]

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.hub.close(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._loop.close()
