"""The agent's hub client (tensorsight.agent.runtime.hub_client) against a real loopback listener: hello with the token,
events in order, bounded queue that drops (and reports the count) instead of blocking, a gone or refusing hub, and a
program with no hub at all.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from support.paths import PYHELPERS
from tensorsight.agent.runtime import hub_client

pytestmark = pytest.mark.numpy_only  # also run under Python 3.10, 3.12 and 3.13 (scripts/test.sh)


class Listener:
    """A minimal hub: accepts one connection, answers the hello, records every line (optionally reads nothing)."""

    def __init__(self, answer: dict | None = None, read: bool = True, port: int = 0) -> None:
        self.sock = socket.create_server(("127.0.0.1", port))
        self.port = self.sock.getsockname()[1]
        self.lines: list[dict] = []
        self.answer = answer if answer is not None else {"type": "welcome", "sessionId": "t"}
        self.read = threading.Event()
        if read:
            self.read.set()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        conn, _ = self.sock.accept()
        stream = conn.makefile("rb")
        self.lines.append(json.loads(stream.readline()))
        conn.sendall((json.dumps(self.answer) + "\n").encode())
        if self.answer.get("type") == "rejected":
            conn.close()
            return
        self.read.wait()
        for raw in stream:
            self.lines.append(json.loads(raw))

    def wait_for(self, predicate, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self.lines):
                return
            time.sleep(0.02)
        raise AssertionError(f"listener never saw what was expected; got {[e.get('type') for e in self.lines][:20]}")


def test_parse_address():
    assert hub_client.parse_address("127.0.0.1:5000") == ("127.0.0.1", 5000)
    assert hub_client.parse_address("[::1]:80") == ("::1", 80)
    for bad in ("", "localhost", "127.0.0.1:", "127.0.0.1:99999", ":80", "host:port"):
        assert hub_client.parse_address(bad) is None


def test_hello_then_events_in_order_then_bye():
    hub = Listener()
    client = hub_client.HubClient(("127.0.0.1", hub.port), "secret-token")
    for step in range(50):
        client.offer({"type": "scalars", "step": step, "values": {"loss": float("nan") if step == 3 else 1.0}})
    assert client.flush(timeout=5.0)
    hub.wait_for(lambda lines: lines and lines[-1]["type"] == "bye")
    hello = hub.lines[0]
    assert hello["type"] == "hello" and hello["token"] == "secret-token" and hello["protocol"] == 1
    assert hello["pid"] == os.getpid()
    steps = [e["step"] for e in hub.lines if e["type"] == "scalars"]
    assert steps == list(range(50))
    assert hub.lines[-1] == {"type": "bye", "pid": os.getpid(), "time": hub.lines[-1]["time"], "dropped": 0}
    assert client.state == "closed" and client.dropped_total == 0


@pytest.mark.timing  # bounds a wall time: scripts/test.sh runs it with nothing beside it
def test_slow_hub_drops_with_a_count_and_never_blocks(monkeypatch):
    monkeypatch.setattr(hub_client, "QUEUE_LIMIT", 200)
    hub = Listener(read=False)  # accepts, answers the hello, then stops reading
    client = hub_client.HubClient(("127.0.0.1", hub.port), "t")
    payload = "x" * 1024
    offered = 20_000  # ~20 MB: far more than the socket buffers hold
    started = time.perf_counter()
    for index in range(offered):
        client.offer({"type": "log", "index": index, "message": payload})
    elapsed = time.perf_counter() - started
    assert elapsed < 5.0, f"offering events blocked the program ({elapsed:.2f} s)"
    assert client.dropped_total > 0
    hub.read.set()  # the hub catches up
    assert client.flush(timeout=30.0)
    hub.wait_for(lambda lines: lines and lines[-1]["type"] == "bye", timeout=30.0)
    received = [e["index"] for e in hub.lines if e["type"] == "log"]
    assert received == sorted(received)
    # every offered event is accounted for: delivered, or counted as dropped (and the count reaches the hub)
    assert len(received) + hub.lines[-1]["dropped"] == offered
    assert 0 < sum(e["count"] for e in hub.lines if e["type"] == "dropped") <= hub.lines[-1]["dropped"]


@pytest.mark.timing  # bounds a wall time: scripts/test.sh runs it with nothing beside it
def test_gone_hub_costs_nothing_and_flush_is_bounded():
    unused = socket.socket()
    unused.bind(("127.0.0.1", 0))
    port = unused.getsockname()[1]
    unused.close()  # nothing listens there
    client = hub_client.HubClient(("127.0.0.1", port), "t")
    started = time.perf_counter()
    for index in range(1000):
        client.offer({"type": "log", "index": index})
    assert client.flush(timeout=0.5) is False or client.dropped_total >= 0
    assert time.perf_counter() - started < 3.0
    deadline = time.monotonic() + 5.0
    while client.dropped_total < 1000 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert client.dropped_total >= 1000 and client.state in ("retrying", "connecting")


def _free_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


def test_a_hub_that_comes_up_late_gets_everything_published_before_it_in_order():
    port = _free_port()  # nothing listens there yet
    client = hub_client.HubClient(("127.0.0.1", port), "t")
    for index in range(50):
        client.offer({"type": "log", "index": index})
    deadline = time.monotonic() + 5.0
    while client.state != "retrying" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert client.state == "retrying"
    client.offer({"type": "log", "index": 50})  # published while the client waits to retry
    hub = Listener(port=port)  # the hub comes up (the client retries within RETRY_SECONDS)
    hub.wait_for(lambda lines: len(lines) >= 52)
    assert hub.lines[0]["type"] == "hello"
    assert [e["index"] for e in hub.lines[1:]] == list(range(51))
    assert client.dropped_total == 0
    assert client.flush(timeout=5.0) is True
    hub.wait_for(lambda lines: lines[-1]["type"] == "bye")
    assert hub.lines[-1]["dropped"] == 0


def test_rejected_client_stops_for_good():
    hub = Listener(answer={"type": "rejected", "reason": "bad token"})
    client = hub_client.HubClient(("127.0.0.1", hub.port), "wrong")
    client.offer({"type": "log", "message": "first"})
    deadline = time.monotonic() + 5.0
    while client.state != "rejected" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert client.state == "rejected"
    client.offer({"type": "log", "message": "second"})
    assert client.dropped_total >= 1
    assert client.flush(timeout=0.5) is False or client.state == "rejected"


def _run_agent(env_extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORSIGHT_")}
    env.update(PYTHONPATH=PYHELPERS, **env_extra)
    code = (
        "from tensorsight.agent.runtime import events, hub_client\n"
        "hub_client.arm('doctor')\n"
        "events.emit('log', message='hello')\n"
        "c = hub_client.client()\n"
        "print('client', None if c is None else c.address)\n"
    )
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


def test_without_a_hub_nothing_is_armed():
    result = _run_agent({})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "client None"
    assert result.stderr == ""


def test_a_malformed_hub_address_is_reported_once_and_ignored():
    result = _run_agent({"TENSORSIGHT_HUB": "not-an-address", "TENSORSIGHT_TOKEN": "t"})
    assert result.returncode == 0
    assert result.stdout.strip() == "client None"
    assert "ignoring TENSORSIGHT_HUB='not-an-address'" in result.stderr


@pytest.mark.timeout(60)
def test_program_exit_flushes_to_a_live_hub():
    hub = Listener()
    result = _run_agent({"TENSORSIGHT_HUB": f"127.0.0.1:{hub.port}", "TENSORSIGHT_TOKEN": "tok"})
    assert result.returncode == 0, result.stderr
    hub.wait_for(lambda lines: lines and lines[-1]["type"] == "bye")
    assert [e["type"] for e in hub.lines] == ["hello", "log", "bye"]
    assert hub.lines[0]["token"] == "tok" and hub.lines[1]["message"] == "hello"
