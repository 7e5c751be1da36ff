"""Multi-process debugging for the tests: one root session, plus one attached session per child process.

With ``"subProcess": true`` (debugpy's default) the debuggee's children, e.g. the workers ``torchrun`` spawns, load
debugpy too and connect back to the same ``python -m debugpy.adapter``. The adapter then tells the root client about
each child: by a ``startDebugging`` reverse request when the client declared ``supportsStartDebuggingRequest`` (VS
Code does), otherwise by a ``debugpyAttach`` event (what this client asks for). Either way the child's configuration
says ``request: attach``, ``subProcessId: <pid>`` and ``connect: {host, port}``: the adapter's own client listener on
loopback. A second DAP connection to that port, attaching with that configuration, is the child's debug session; this
is what VS Code does when it starts a child session. The child runs no user code until that session's
``configurationDone``, so breakpoints set before it are never missed.

Usage (see tests/agent/distributed/test_distributed.py):

    with MultiProcessSession.launch(module="torch.distributed.run", args=[...], breakpoints=[...]) as job:
        workers = job.wait_for_workers(2)              # attached, configured and running
        rank1 = job.worker_with_env("RANK", "1")
        stop = rank1.wait_for_stop()

``MultiProcessSession.attach(host, port, path_mappings=...)`` does the same for a job started elsewhere under
``python -m debugpy --listen host:port`` (the README's remote recipe, through an SSH tunnel's local port).

``DebugSession`` (tests/support/dap.py) is reused unchanged: a worker session drives it over a socket through
``SocketTransport``, a process-like view of the connection. Every wait is bounded, and ``close`` ends every process
the job started (workers by pid, then the root), so a broken run fails the test instead of hanging it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from typing import Any

from .dap import DEFAULT_TIMEOUT, DapError, DebugSession, SessionLogs
from .paths import PYHELPERS, PYTHON

Breakpoints = Iterable[tuple[str, int, str | None]]


def free_port() -> int:
    """A loopback port nothing listens on right now (for a debuggee or a relay the test starts next)."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = int(probe.getsockname()[1])
    probe.close()
    return port


class SocketTransport:
    """One TCP connection to the adapter, shaped like the ``subprocess.Popen`` that ``DebugSession`` reads from."""

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self._socket = _connect(host, port, timeout)
        self._socket.settimeout(None)  # the reader thread blocks on it; every wait in DebugSession has its own timeout
        self.stdout = self._socket.makefile("rb")
        self.stdin = self._socket.makefile("wb")
        self._closed = False

    def poll(self) -> int | None:
        return 0 if self._closed else None

    def wait(self, timeout: float | None = None) -> int:
        self._shutdown()
        return 0

    def kill(self) -> None:
        self._shutdown()

    def _shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        for closer in (self.stdin.close, lambda: self._socket.shutdown(socket.SHUT_RDWR), self._socket.close):
            with contextlib.suppress(OSError, ValueError):
                closer()


class WorkerSession(DebugSession):
    """The debug session of one child process, attached through the adapter's client listener."""

    def __init__(self, transport: Any, config: dict[str, Any]) -> None:
        super().__init__(transport)
        self.config = config
        self.pid = int(config["subProcessId"])

    @classmethod
    def attach(
        cls,
        config: dict[str, Any],
        *,
        breakpoints: Breakpoints = (),
        exception_filters: Iterable[str] = (),
        timeout: float = DEFAULT_TIMEOUT,
    ) -> WorkerSession:
        """Attach to the child that ``config`` (a ``debugpyAttach`` body) names, set breakpoints and let it run."""
        connect = config["connect"]
        session = cls(SocketTransport(connect["host"], int(connect["port"])), config)
        try:
            session.request("initialize", _initialize_arguments("tensorsight-tests-worker"), timeout=timeout)
            attach_seq = session.send("attach", {**config, "request": "attach"})
            session.wait_for_event("initialized", timeout=timeout)
            _configure(session, list(breakpoints), list(exception_filters))
            session.wait_for_response(attach_seq, timeout=timeout)
        except BaseException:
            session.close()
            raise
        return session

    def env(self, name: str, timeout: float = DEFAULT_TIMEOUT) -> str | None:
        """An environment variable of the running worker (DAP evaluate without a frame runs on pydevd's thread)."""
        args = {"expression": f"__import__('os').environ.get({name!r})", "context": "repl"}
        response = self.wait_for_response(self.send("evaluate", args), timeout)
        if not response.get("success"):
            raise DapError(f"evaluate failed in worker {self.pid}: {response.get('message')}")
        result = response["body"]["result"]
        return None if result == "None" else str(result).strip("'\"")


class MultiProcessSession:
    """A root debug session launched with ``subProcess: true`` and the worker sessions attached to its children."""

    def __init__(self, root: DebugSession, breakpoints: list[tuple[str, int, str | None]], filters: list[str]) -> None:
        self.root = root
        self.workers: list[WorkerSession] = []
        self._breakpoints = breakpoints
        self._filters = filters
        self._seen_children: set[int] = set()
        self.root_pid: int | None = None

    @classmethod
    def launch(
        cls,
        *,
        module: str | None = None,
        program: str | None = None,
        args: Iterable[str] = (),
        cwd: str,
        breakpoints: Breakpoints = (),
        options: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        exception_filters: Iterable[str] = (),
        timeout: float = DEFAULT_TIMEOUT,
        as_the_extension: bool = False,
        python: str = PYTHON,
    ) -> MultiProcessSession:
        """Launch ``module`` (``python -m``) or ``program`` under a real adapter over stdio, with pyhelpers injected.

        The same breakpoints and exception filters go to the root and, later, to every worker (as VS Code sends a
        workspace's breakpoints to every session). ``as_the_extension`` starts debugpy's adapter and launcher as a
        "Debug Training" launch does (``tensorsight.debugpy_start``: the adapter module, ``debugLauncherPath``).
        ``python`` runs the adapter and the program (its environment must hold debugpy).
        """
        if (module is None) == (program is None):
            raise ValueError("launch needs exactly one of module= or program=")
        adapter_env = None
        adapter_module = "debugpy.adapter"
        extra: dict[str, Any] = {}
        if as_the_extension:
            adapter_module = "tensorsight.debugpy_start.adapter"
            existing_path = os.environ.get("PYTHONPATH", "")
            adapter_env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (PYHELPERS, existing_path) if p)}
            extra["debugLauncherPath"] = os.path.join(PYHELPERS, "tensorsight", "debugpy_start", "launcher")
        logs = SessionLogs()
        adapter = subprocess.Popen(
            [python, "-m", adapter_module, *logs.adapter_args(env or {})],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=adapter_env,
        )
        root = DebugSession(adapter, logs)
        bps, filters = list(breakpoints), list(exception_filters)
        job = cls(root, bps, filters)
        try:
            root.request("initialize", _initialize_arguments("tensorsight-tests"), timeout=timeout)
            launch_env = dict(env or {})
            existing = launch_env.get("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
            launch_env["PYTHONPATH"] = os.pathsep.join(p for p in (PYHELPERS, existing) if p)
            if options is not None:
                launch_env["TENSORSIGHT_OPTIONS"] = json.dumps(options)
            target: dict[str, Any] = {"module": module} if module is not None else {"program": program}
            launch_seq = root.send(
                "launch",
                {
                    "type": "python",
                    "request": "launch",
                    **target,
                    "args": list(args),
                    "cwd": cwd,
                    "console": "internalConsole",
                    "justMyCode": False,
                    "subProcess": True,
                    "python": [python],
                    "env": launch_env,
                    **extra,
                },
            )
            job._finish_start(launch_seq, timeout)
        except BaseException as error:
            job.close(error)
            raise
        return job

    @classmethod
    def attach(
        cls,
        host: str,
        port: int,
        *,
        path_mappings: Iterable[tuple[str, str]] = (),
        breakpoints: Breakpoints = (),
        exception_filters: Iterable[str] = (),
        timeout: float = DEFAULT_TIMEOUT,
        extra_attach: dict[str, Any] | None = None,
    ) -> MultiProcessSession:
        """Attach to a job started under ``python -m debugpy --listen host:port``, as a launch.json attach does
        (``extra_attach``: more fields of the attach request, e.g. what the extension adds for the agent).

        ``path_mappings`` are ``(local_root, remote_root)`` pairs: breakpoints use local paths, frames come back with
        local paths. The job's children are then reported and attached exactly as for a launch.
        """
        root = DebugSession(SocketTransport(host, port, timeout=timeout))  # type: ignore[arg-type]
        bps, filters = list(breakpoints), list(exception_filters)
        job = cls(root, bps, filters)
        try:
            root.request("initialize", _initialize_arguments("tensorsight-tests"), timeout=timeout)
            attach_seq = root.send(
                "attach",
                {
                    "type": "python",
                    "request": "attach",
                    "connect": {"host": host, "port": port},
                    "pathMappings": [{"localRoot": local, "remoteRoot": remote} for local, remote in path_mappings],
                    "justMyCode": False,
                    "subProcess": True,
                    **(extra_attach or {}),
                },
            )
            job._finish_start(attach_seq, timeout)
        except BaseException as error:
            job.close(error)
            raise
        return job

    def _finish_start(self, start_seq: int, timeout: float) -> None:
        """After the launch/attach request: configure breakpoints, await its answer, learn the root process id."""
        self.root.wait_for_event("initialized", timeout=timeout)
        _configure(self.root, self._breakpoints, self._filters)
        self.root.wait_for_response(start_seq, timeout=timeout)
        process = self.root.wait_for_event("process", timeout=timeout, consume=False)
        self.root_pid = int(process["body"]["systemProcessId"])

    # ---- children -------------------------------------------------------------------------------------------------

    def wait_for_workers(self, count: int, timeout: float = DEFAULT_TIMEOUT) -> list[WorkerSession]:
        """Attach to children as the adapter reports them until ``count`` are attached; returns them in that order."""
        deadline = time.monotonic() + timeout
        while len(self.workers) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DapError(f"only {len(self.workers)} of {count} child processes reported within {timeout}s")
            event = self.root.wait_for_event("debugpyAttach", timeout=remaining)
            config = dict(event["body"])
            pid = int(config["subProcessId"])
            if pid in self._seen_children:
                continue
            self._seen_children.add(pid)
            self.workers.append(
                WorkerSession.attach(
                    config, breakpoints=self._breakpoints, exception_filters=self._filters, timeout=remaining
                )
            )
        return list(self.workers)

    def worker_with_env(self, name: str, value: str) -> WorkerSession:
        """The attached worker whose environment has ``name == value`` (e.g. ``RANK``)."""
        for worker in self.workers:
            if worker.env(name) == value:
                return worker
        raise DapError(f"no attached worker has {name}={value}")

    def wait_until(self, predicate: Callable[[], bool], timeout: float, what: str) -> None:
        """Poll ``predicate`` (cheaply) until it holds; raises DapError naming ``what`` after ``timeout``."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise DapError(f"timed out after {timeout}s waiting for {what}")
            time.sleep(0.2)

    # ---- teardown -------------------------------------------------------------------------------------------------

    def close(self, error: BaseException | None = None) -> None:
        """End every session and every process of the job; safe to call twice. On `error`, keep the root's logs."""
        pids = [w.pid for w in self.workers]
        for worker in self.workers:
            with contextlib.suppress(Exception):
                worker.close()
        with contextlib.suppress(Exception):
            self.root.close(error)
        # A worker blocked in a collective may outlive a polite disconnect: make sure nothing is left behind.
        for pid in [*pids, *([self.root_pid] if self.root_pid else [])]:
            _kill_if_alive(pid)
        if self.root.adapter.poll() is None:
            self.root.adapter.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.root.adapter.wait(timeout=10)

    def __enter__(self) -> MultiProcessSession:
        return self

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        self.close(error if isinstance(error, Exception) else None)


def _initialize_arguments(client_id: str) -> dict[str, Any]:
    # No supportsStartDebuggingRequest: the adapter then reports children with a debugpyAttach event.
    return {
        "clientID": client_id,
        "adapterID": "tensorsight",
        "pathFormat": "path",
        "linesStartAt1": True,
        "columnsStartAt1": True,
        "supportsVariableType": True,
        "supportsRunInTerminalRequest": False,
    }


def _configure(session: DebugSession, breakpoints: list[tuple[str, int, str | None]], filters: list[str]) -> None:
    by_file: dict[str, list[tuple[int, str | None]]] = {}
    for path, line, condition in breakpoints:
        by_file.setdefault(path, []).append((line, condition))
    for path, lines in by_file.items():
        session.set_breakpoints(path, lines)
    session.request("setExceptionBreakpoints", {"filters": filters})
    session.request("configurationDone", {})


def _connect(host: str, port: int, timeout: float) -> socket.socket:
    """Connect, retrying while nothing listens yet (a ``debugpy --listen`` process is still starting)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return socket.create_connection((host, port), timeout=max(1.0, deadline - time.monotonic()))
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _kill_if_alive(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
