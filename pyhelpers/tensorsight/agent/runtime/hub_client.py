"""Sends every agent event to the language server's runtime hub, without ever slowing or blocking the program.

Armed by ``install`` (first feature, so later features' events reach the editor). When ``TENSORSIGHT_HUB`` is unset
nothing happens at all: the agent works alone. Otherwise ``arm`` subscribes a listener to the event bus; the listener
only puts the event on a bounded queue (drops, counted, when full) and a daemon thread started on the first event
does everything else: connects lazily, writes, reconnects with back-off, and waits quietly while the hub is not there.
What the program publishes while no hub listens (a hub that comes up after the program started, one that went away
for a moment) stays queued, within the same bound, and is sent once the hub answers: the first steps' shapes and
scalars are not lost to a late hub. At exit the queue is flushed for at most ``FLUSH_SECONDS``. Stdlib only.

Wire protocol (newline-delimited JSON over TCP to the loopback address in ``TENSORSIGHT_HUB``, "127.0.0.1:PORT";
declared in ``tensorsight.core.protocol``):

1. the client's first line is ``{"type": "hello", "protocol": 1, "token": TENSORSIGHT_TOKEN, "pid", "rank"?,
   "script", "argv", "origin"}``;
2. the hub answers one line: ``{"type": "welcome", "sessionId"}``, or ``{"type": "rejected", "reason"}`` and closes
   (a rejected client stops for good: it drops, and counts, every later event);
3. every further line is one event as the bus published it (``type``, ``pid``, ``time``, ``rank``?, data); the client
   adds ``{"type": "dropped", "count"}`` after it had to drop events, and ``{"type": "bye", "dropped"}`` at exit.

Lines are encoded and decoded by ``tensorsight.core.json_lines``, the codec the hub uses too.
"""

from __future__ import annotations

import atexit
import collections
import os
import socket
import sys
import threading
import time
from typing import Any

from tensorsight.agent.debugger.threads import hide_from_debugger
from tensorsight.agent.runtime import events, identity
from tensorsight.agent.runtime.guard import never_raise, report_once
from tensorsight.agent.runtime.install import installed_origin
from tensorsight.agent.runtime.options import hub_address, hub_token
from tensorsight.core import json_lines, protocol

PROTOCOL = protocol.HUB_PROTOCOL
QUEUE_LIMIT = 10_000  # events waiting to be sent (also while no hub listens); beyond this dropped and counted
CONNECT_TIMEOUT = 2.0
SEND_TIMEOUT = 5.0  # a hub that stops reading for this long counts as gone
RETRY_SECONDS = (0.5, 1.0, 2.0, 5.0)  # back-off between connection attempts, then every 5 s
FLUSH_SECONDS = 1.0  # at most this long at exit


def parse_address(address: str) -> tuple[str, int] | None:
    """``"127.0.0.1:5000"`` -> ``("127.0.0.1", 5000)``; ``"[::1]:5000"`` works too; None when malformed."""
    host, sep, port = address.strip().rpartition(":")
    if not sep or not port.isdigit():
        return None
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    number = int(port)
    if not host or not 0 < number < 65536:
        return None
    return host, number


class HubClient:
    """The queue, the sender thread and the counters of one process's connection to the hub."""

    def __init__(self, address: tuple[str, int], token: str) -> None:
        self.address = address
        self.token = token
        self._queue: collections.deque[dict[str, Any]] = collections.deque()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._sending = False  # the thread holds an event it is writing
        self._closing = False
        self.dropped = 0  # events dropped and not yet reported to the hub
        self.dropped_total = 0
        self.sent = 0
        self.state = "idle"  # idle -> connecting -> connected -> closed (at exit) | retrying | rejected
        self._pid = os.getpid()

    # ------------------------------------------------------------------ program side (must never block)
    def offer(self, event: dict[str, Any]) -> None:
        """Queue one event; called from any thread of the program, returns at once."""
        if os.getpid() != self._pid:
            self._after_fork()
        with self._lock:
            if self._closing or self.state == "rejected" or len(self._queue) >= QUEUE_LIMIT:
                self.dropped += 1
                self.dropped_total += 1
                return
            self._queue.append(event)
            if self._thread is None:
                self._start_thread()
            self._wake.notify()

    def flush(self, timeout: float = FLUSH_SECONDS) -> bool:
        """Wait (bounded) until the queue is sent; then send ``bye``. True when everything went out."""
        deadline = time.monotonic() + timeout
        with self._lock:
            if self._thread is None:
                return not self._queue
            self._queue.append(
                protocol.wire_event(protocol.ByeEvent(pid=os.getpid(), time=time.time(), dropped=self.dropped_total))
            )
            self._closing = True
            self._wake.notify()
            while (self._queue or self._sending) and self.state in ("connecting", "connected"):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._wake.wait(remaining)
            return not self._queue and not self._sending

    def _after_fork(self) -> None:
        """In a forked child (DataLoader workers): fresh state, its own lazy connection, nothing inherited."""
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._queue = collections.deque()
        self._thread = None
        self._sending = False
        self._closing = False
        self.state = "idle"
        self.dropped = 0
        self.dropped_total = 0
        self._pid = os.getpid()

    def _start_thread(self) -> None:
        self.state = "connecting"
        # not listed, not paused with the program, not traced: it keeps sending while the debugger holds the program
        thread = hide_from_debugger(threading.Thread(target=self._run, name="tensorsight-hub-client", daemon=True))
        self._thread = thread
        thread.start()

    # ------------------------------------------------------------------ sender thread
    def _run(self) -> None:
        attempt = 0
        while True:
            self._set_state("connecting")
            sock = self._connect()
            if sock is None:
                if self.state == "rejected":
                    self._discard()
                    return
                self._set_state("retrying")
                delay = RETRY_SECONDS[min(attempt, len(RETRY_SECONDS) - 1)]
                attempt += 1
                if not self._wait_before_retry(delay):
                    return
                continue
            attempt = 0
            try:
                self._pump(sock)
            except OSError:
                pass  # the hub went away: reconnect (events meanwhile stay queued, within QUEUE_LIMIT)
            finally:
                self._set_state("closed" if self._closing and not self._queue else "retrying")
                try:
                    sock.close()
                except OSError:
                    pass
                with self._lock:
                    self._sending = False
                    self._wake.notify_all()
            with self._lock:
                if self._closing and not self._queue:
                    return

    def _set_state(self, state: str) -> None:
        with self._lock:
            if self.state != "rejected":
                self.state = state
            self._wake.notify_all()

    def _connect(self) -> socket.socket | None:
        sock: socket.socket | None = None
        try:
            sock = socket.create_connection(self.address, timeout=CONNECT_TIMEOUT)
            sock.sendall(json_lines.encode(self._hello()))
            answer = _read_line(sock, CONNECT_TIMEOUT)
            sock.settimeout(SEND_TIMEOUT)
        except OSError as exc:
            if sock is not None:
                sock.close()
            report_once("hub-connect", f"runtime hub at {self.address[0]}:{self.address[1]} unreachable ({exc})")
            return None
        given = protocol.parse_hub_answer(answer)
        if isinstance(given, protocol.Rejected):
            report_once("hub-rejected", f"runtime hub refused this process: {given.reason or 'no reason given'}")
            with self._lock:
                self.state = "rejected"
            sock.close()
            return None
        self._set_state("connected")
        return sock

    def _hello(self) -> dict[str, Any]:
        hello = protocol.HelloEvent(
            protocol=PROTOCOL,
            pid=os.getpid(),
            time=time.time(),
            script=os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else None,
            # each argument cut short: the hub takes a hello of protocol.MAX_HELLO_BYTES at most
            argv=[str(arg)[: protocol.MAX_ARGV_ITEM_CHARS] for arg in sys.argv[:16]],
            origin=installed_origin(),
            rank=identity.rank(),
        )
        return {**protocol.wire_event(hello), "token": self.token}  # the token is the handshake's, not the event's

    def _pump(self, sock: socket.socket) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closing:
                    self._wake.wait(1.0)
                if not self._queue:
                    return  # closing and drained
                batch = list(self._queue)
                self._queue.clear()
                dropped, self.dropped = self.dropped, 0
                self._sending = True
            if dropped:
                marker = protocol.DroppedEvent(pid=os.getpid(), time=time.time(), count=dropped)
                batch.insert(0, protocol.wire_event(marker))
            payload = b"".join(json_lines.encode(event) for event in batch)
            sock.sendall(payload)
            with self._lock:
                self.sent += len(batch)
                self._sending = False
                self._wake.notify_all()

    def _wait_before_retry(self, delay: float) -> bool:
        """While the hub is unreachable: keep what is queued (offer bounds it) for the next connection, and wait.

        False when it is time to stop: the program is exiting (``flush``) with no hub to send to, so what is queued is
        dropped, counted, instead of holding the exit up.
        """
        deadline = time.monotonic() + delay
        with self._lock:
            while True:
                if self._closing:
                    self._discard_locked()
                    return False
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return True
                self._wake.wait(remaining)

    def _discard(self) -> None:
        with self._lock:
            self._discard_locked()

    def _discard_locked(self) -> None:
        if self._queue:
            self.dropped += len(self._queue)
            self.dropped_total += len(self._queue)
            self._queue.clear()
        self._wake.notify_all()


def _read_line(sock: socket.socket, timeout: float) -> dict[str, Any]:
    """The hub's one-line answer to the hello ({} when it says nothing in time or nothing readable)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while not data.endswith(b"\n") and len(data) < 4096:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except TimeoutError:
        return {}
    answer, _problem = json_lines.decode(data.strip())
    return answer or {}


_client: HubClient | None = None


def client() -> HubClient | None:
    """This process's hub client (None when no hub was given)."""
    return _client


@never_raise()
def arm(origin: str = "debugger") -> None:
    """Subscribe the client when the environment names a hub; cheap, no connection until the first event."""
    global _client
    if _client is not None:
        return
    raw_address, token = hub_address(), hub_token()
    if not raw_address:
        return
    address = parse_address(raw_address)
    if address is None:
        report_once("hub-address", f"ignoring {protocol.ENV_HUB}={raw_address!r}: expected HOST:PORT")
        return
    _client = HubClient(address, token or "")
    events.subscribe(_client.offer)
    atexit.register(_flush_at_exit)


@never_raise()
def _flush_at_exit() -> None:
    if _client is not None:
        _client.flush()
