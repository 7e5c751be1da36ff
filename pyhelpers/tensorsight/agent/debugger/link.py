"""The debugged process's link to debugpy's adapter: replies not held 40 ms by Nagle, no 0.1 s pause to open it.

Armed under a debugger by ``tensorsight.agent.runtime.install`` (``DEBUGGER_FEATURES``), which runs from the pydevd
plugin before pydevd opens its connection. pydevd sends each message as two writes (the ``Content-Length`` header,
then the body) on a TCP socket it leaves with Nagle's algorithm on (debugpy issue #2054, open in debugpy 1.8.x). The
kernel then holds the body until the adapter acknowledges the header, and the adapter's kernel delays that
acknowledgement by up to 40 ms because it has nothing to send back. Every request the adapter makes of the process
(initialize, attach, breakpoints, configurationDone, threads, stackTrace, variables) pays that wait once per reply.
A plain F5 on a training script with four DataLoader workers makes over a hundred such exchanges, because each
worker is attached as a child session before it runs: about 0.25 s per worker and 0.3 s at launch.

pydevd also ends ``initialize_network``, which every connection passes through, with ``time.sleep(0.1)`` "to give
threads time to start" after starting its reader and writer threads. ``Thread.start`` already returns only once the
thread runs, so the pause waits for nothing, and it is paid by the process at launch and again by each forked worker
before the editor can attach to it.

``arm`` wraps ``PyDB.initialize_network`` (``connect`` for a launch, the listener thread for ``debugpy.listen``,
``settrace_forked`` in a forked worker, which inherits the wrapped class). The wrapper sets ``TCP_NODELAY`` on the
socket, then calls the original with pydevd's module-level ``time`` seen through ``agent.debugger.pydevd_clock`` for
the length of the call: on the connecting thread, the one ``sleep`` returns at once; every other use, and every other
thread, reaches the real module. A connection already open when the agent arms (the agent loaded into a running
session) gets the socket option too. The option only changes when the kernel sends bytes already written, never what
is sent; a pydevd that lacks the method, or whose method takes no ``time`` from its module, is left as it is.
"""

from __future__ import annotations

import socket
import sys
from typing import Any

from tensorsight.agent.debugger.pause import global_debugger
from tensorsight.agent.debugger.pydevd_clock import call_with_sleeps
from tensorsight.agent.runtime.guard import report_once
from tensorsight.agent.runtime.patches import Patches

_patches = Patches("link")


def arm(origin: str = "debugger") -> None:
    """Wrap ``PyDB.initialize_network`` once and set the option on a connection already open."""
    pydevd = sys.modules.get("pydevd")
    owner = getattr(pydevd, "PyDB", None)
    original = getattr(owner, "initialize_network", None)
    if owner is None or original is None:
        report_once("link-api", "pydevd's PyDB.initialize_network not found: the debugger's replies may lag 40 ms")
        return
    _patches.replace(owner, "initialize_network", _without_delay)
    send_without_delay(getattr(getattr(global_debugger(), "writer", None), "sock", None))


def send_without_delay(sock: Any) -> bool:
    """Turn Nagle's algorithm off on ``sock`` when it is a TCP socket; False when it is not or the option fails."""
    if not isinstance(sock, socket.socket) or sock.type != socket.SOCK_STREAM:
        return False
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return False
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        return False
    return True


def _without_delay(original: Any) -> Any:
    def initialize_network(self: Any, sock: Any, *args: Any, **kwargs: Any) -> Any:
        send_without_delay(sock)
        return call_with_sleeps(original, no_pause, self, sock, *args, **kwargs)

    return initialize_network


def no_pause(seconds: float) -> float:
    """The connecting thread's sleeps: none (``Thread.start`` has already waited for the threads to run)."""
    return 0.0
