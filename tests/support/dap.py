"""A small Debug Adapter Protocol client that drives a real ``python -m debugpy.adapter`` over stdio.

Usage (see tests/agent):

    with DebugSession.launch(program("tensors.py"), breakpoints=[(path, line, None)]) as session:
        stop = session.wait_for_stop()
        frame_id = session.top_frame_id(stop)
        variables = session.locals(frame_id)

The debuggee gets ``pyhelpers`` on PYTHONPATH exactly as the extension injects it, so the TensorSight pydevd plugin
loads the way it does for users. Every wait has a timeout, so a broken session fails the test instead of hanging it.

Each session writes the adapter's message log (``--log-stderr``) and pydevd's own debug log (level 1, one file per
process, forked workers included) into a folder of its own. When the test's ``with`` block fails, the folder is kept
under ``test-output/dap-logs/`` and the failure carries a note with its path and the adapter log's last lines;
otherwise it is deleted when the session closes.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable
from typing import Any

from .paths import PYHELPERS, PYTHON, REPO

DEFAULT_TIMEOUT = 60.0
KEPT_LOGS = os.path.join(REPO, "test-output", "dap-logs")
ADAPTER_LOG_LINES_IN_NOTE = 30


class SessionLogs:
    """The logs of one debug session: written to a private folder, kept only when the session's test fails."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="tensorsight-dap-")
        self.kept: str | None = None
        self.closed = False

    def adapter_args(self, env: dict[str, str]) -> list[str]:
        """``--log-dir``: debugpy's adapter, launcher and server, and pydevd in every process, log into the folder.

        Not when the test asks for logs of its own (``PYDEVD_DEBUG``, ``DEBUGPY_LOG_DIR``): they stay where it wants.
        """
        own = "PYDEVD_DEBUG" in env or "DEBUGPY_LOG_DIR" in env or "DEBUGPY_LOG_DIR" in os.environ
        return [] if own else ["--log-dir", self.folder]

    def keep(self, error: BaseException) -> None:
        """Move the folder under test-output/dap-logs/ and note where, with the adapter log's tail, on `error`."""
        os.makedirs(KEPT_LOGS, exist_ok=True)
        kept = tempfile.mkdtemp(prefix=time.strftime("%H%M%S-"), dir=KEPT_LOGS)
        self.kept, self.closed = kept, True
        names = sorted(os.listdir(self.folder))
        for name in names:
            shutil.move(os.path.join(self.folder, name), kept)
        shutil.rmtree(self.folder, ignore_errors=True)
        tail: list[str] = []
        for name in names:
            if name.startswith("debugpy.adapter"):
                with open(os.path.join(kept, name), encoding="utf-8", errors="replace") as handle:
                    tail = handle.readlines()[-ADAPTER_LOG_LINES_IN_NOTE:]
        if hasattr(error, "add_note"):
            error.add_note(f"debug session logs kept in {kept}; the adapter's last lines:\n" + "".join(tail))

    def discard(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        self.closed = True


class DapError(AssertionError):
    """A request failed or an expected message did not arrive in time."""


class DebugSession:
    """One adapter process and one debuggee; use ``DebugSession.launch`` as a context manager."""

    def __init__(self, adapter: subprocess.Popen[bytes], logs: SessionLogs | None = None) -> None:
        self.adapter = adapter
        self.logs = logs
        self._seq = itertools.count(1)
        self._responses: dict[int, dict[str, Any]] = {}
        self._events: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._closed = False
        self.output: list[str] = []
        self.output_by_category: dict[str, list[str]] = {}  # "stdout", "stderr", "console"... -> texts in order
        self.first_seen: dict[str, float] = {}  # event name -> time.perf_counter() when the first one arrived
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    # ---- construction -------------------------------------------------------------------------------------------

    @classmethod
    def launch(
        cls,
        program: str,
        *,
        args: Iterable[str] = (),
        breakpoints: Iterable[tuple[str, int, str | None]] = (),
        options: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        exception_filters: Iterable[str] = (),
        inject: bool = True,
        timeout: float = DEFAULT_TIMEOUT,
        extra_launch: dict[str, Any] | None = None,
        python: str = PYTHON,
    ) -> DebugSession:
        """Start the adapter, launch ``program`` and set breakpoints ``(file, line, condition)``.

        ``python`` runs both the adapter and the debuggee (its environment must hold debugpy); ``inject=False`` leaves
        PYTHONPATH alone, so the plugin loads only if that environment has TensorSight installed.
        """
        logs = SessionLogs()
        adapter = subprocess.Popen(
            [python, "-m", "debugpy.adapter", *logs.adapter_args(env or {})],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        session = cls(adapter, logs)
        try:
            session.request(
                "initialize",
                {
                    "clientID": "tensorsight-tests",
                    "adapterID": "tensorsight",
                    "pathFormat": "path",
                    "linesStartAt1": True,
                    "columnsStartAt1": True,
                    "supportsVariableType": True,
                    "supportsRunInTerminalRequest": False,
                },
                timeout=timeout,
            )
            launch_env = dict(env or {})
            if inject:
                existing = launch_env.get("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
                launch_env["PYTHONPATH"] = os.pathsep.join(p for p in (PYHELPERS, existing) if p)
            if options is not None:
                launch_env["TENSORSIGHT_OPTIONS"] = json.dumps(options)
            launch_args: dict[str, Any] = {
                "type": "python",
                "request": "launch",
                "program": program,
                "args": list(args),
                "cwd": os.path.dirname(program),
                "console": "internalConsole",
                "justMyCode": False,
                "python": [python],
                "env": launch_env,
                **(extra_launch or {}),
            }
            launch_seq = session.send("launch", launch_args)
            session.wait_for_event("initialized", timeout=timeout)
            by_file: dict[str, list[tuple[int, str | None]]] = {}
            for path, line, condition in breakpoints:
                by_file.setdefault(path, []).append((line, condition))
            for path, lines in by_file.items():
                session.set_breakpoints(path, lines)
            session.request("setExceptionBreakpoints", {"filters": list(exception_filters)})
            session.request("configurationDone", {})
            session.wait_for_response(launch_seq, timeout=timeout)
        except BaseException as error:
            session.close(error)
            raise
        return session

    # ---- protocol plumbing ----------------------------------------------------------------------------------------

    def _read_loop(self) -> None:
        stream = self.adapter.stdout
        assert stream is not None
        while True:
            headers: dict[str, str] = {}
            while True:
                line = stream.readline()
                if not line:
                    with self._cond:
                        self._closed = True
                        self._cond.notify_all()
                    return
                line = line.strip()
                if not line:
                    break
                key, _, value = line.decode("ascii").partition(":")
                headers[key.strip().lower()] = value.strip()
            body = stream.read(int(headers["content-length"]))
            message = json.loads(body)
            with self._cond:
                if message.get("type") == "response":
                    self._responses[message["request_seq"]] = message
                elif message.get("type") == "event":
                    self.first_seen.setdefault(str(message.get("event")), time.perf_counter())
                    self._events.append(message)
                    if message.get("event") == "output":
                        body = message.get("body", {})
                        self.output.append(body.get("output", ""))
                        category = str(body.get("category", "console"))
                        self.output_by_category.setdefault(category, []).append(body.get("output", ""))
                elif message.get("type") == "request":
                    pass  # reverse requests (runInTerminal, startDebugging) are not used by these tests
                self._cond.notify_all()

    def send(self, command: str, arguments: dict[str, Any] | None = None) -> int:
        seq = next(self._seq)
        payload = json.dumps({"seq": seq, "type": "request", "command": command, "arguments": arguments or {}})
        data = payload.encode("utf-8")
        stdin = self.adapter.stdin
        assert stdin is not None
        stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        stdin.flush()
        return seq

    def wait_for_response(self, seq: int, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while seq not in self._responses:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._closed:
                    raise DapError(f"no response to request {seq} within {timeout}s")
                self._cond.wait(remaining)
            return self._responses.pop(seq)

    def request(self, command: str, arguments: dict[str, Any] | None = None, timeout: float = DEFAULT_TIMEOUT) -> Any:
        """Send a request and return its body; raises DapError when the adapter answers ``success: false``."""
        response = self.wait_for_response(self.send(command, arguments), timeout)
        if not response.get("success"):
            raise DapError(f"{command} failed: {response.get('message')} {response.get('body')}")
        return response.get("body", {})

    def wait_for_event(
        self, name: str | tuple[str, ...], timeout: float = DEFAULT_TIMEOUT, predicate: Any = None, consume: bool = True
    ) -> dict[str, Any]:
        """Wait for the first not-yet-consumed event called ``name`` (or any of the names, when a tuple) that matches
        ``predicate``, and return it."""
        names = (name,) if isinstance(name, str) else name
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for event in self._events:
                    if event.get("event") in names and (predicate is None or predicate(event)):
                        if consume:
                            self._events.remove(event)
                        return event
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise DapError(f"no {name!r} event within {timeout}s; output so far:\n{''.join(self.output)}")
                if self._closed:
                    raise DapError(f"adapter closed before {name!r}; output:\n{''.join(self.output)}")
                self._cond.wait(remaining)

    # ---- debugging verbs ------------------------------------------------------------------------------------------

    def set_breakpoints(self, path: str, lines: list[tuple[int, str | None]]) -> list[dict[str, Any]]:
        bps = [{"line": line, **({"condition": cond} if cond else {})} for line, cond in lines]
        body = self.request("setBreakpoints", {"source": {"path": path}, "breakpoints": bps})
        return list(body.get("breakpoints", []))

    def wait_for_stop(self, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """The body of the next ``stopped`` event."""
        return self.wait_for_event("stopped", timeout)["body"]

    def wait_for_stop_or_exit(self, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any] | None:
        """The body of the next ``stopped`` event, or None when the debuggee exits first."""
        event = self.wait_for_event(("stopped", "exited"), timeout, consume=False)
        if event.get("event") != "stopped":
            return None
        return self.wait_for_stop(timeout)

    def stack(self, thread_id: int) -> list[dict[str, Any]]:
        return list(self.request("stackTrace", {"threadId": thread_id})["stackFrames"])

    def top_frame(self, stop: dict[str, Any]) -> dict[str, Any]:
        return self.stack(stop["threadId"])[0]

    def top_frame_id(self, stop: dict[str, Any]) -> int:
        return int(self.top_frame(stop)["id"])

    def scopes(self, frame_id: int) -> list[dict[str, Any]]:
        return list(self.request("scopes", {"frameId": frame_id})["scopes"])

    def variables(self, reference: int) -> list[dict[str, Any]]:
        return list(self.request("variables", {"variablesReference": reference})["variables"])

    def locals(self, frame_id: int) -> dict[str, dict[str, Any]]:
        """Variables of the frame's Locals scope, by name."""
        scope = next(s for s in self.scopes(frame_id) if s["name"].lower().startswith("locals"))
        return {v["name"]: v for v in self.variables(scope["variablesReference"])}

    def children(self, variable: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """Children of an expandable variable, by name."""
        return {v["name"]: v for v in self.variables(variable["variablesReference"])}

    def evaluate(self, expression: str, frame_id: int | None = None, context: str = "repl") -> dict[str, Any]:
        args: dict[str, Any] = {"expression": expression, "context": context}
        if frame_id is not None:
            args["frameId"] = frame_id
        return dict(self.request("evaluate", args))

    def continue_(self, thread_id: int) -> None:
        self.request("continue", {"threadId": thread_id})

    def wait_for_exit(self, timeout: float = DEFAULT_TIMEOUT) -> int:
        """Wait for the debuggee to exit; returns its exit code."""
        event = self.wait_for_event("exited", timeout)
        return int(event["body"]["exitCode"])

    def stdout(self) -> str:
        """Everything the session printed so far (the debuggee's stdout and stderr, the Debug Console). Complete once
        ``wait_for_exit`` returned (debugpy's launcher sends "exited" after the last captured output); before that,
        a line the test expects may still be on its way: use ``wait_for_output``."""
        return "".join(self.output)

    def wait_for_output(self, text: str | re.Pattern[str], timeout: float = DEFAULT_TIMEOUT) -> str:
        """Wait until the session's output contains ``text`` (a string, or a compiled pattern to search for) and return
        the output so far; raises DapError with the output when it does not arrive in time."""
        found = (lambda output: text in output) if isinstance(text, str) else (lambda output: bool(text.search(output)))
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                output = "".join(self.output)
                if found(output):
                    return output
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._closed:
                    shown = text if isinstance(text, str) else text.pattern
                    raise DapError(f"{shown!r} was not printed within {timeout}s; output so far:\n{output}")
                self._cond.wait(remaining)

    # ---- teardown -------------------------------------------------------------------------------------------------

    def close(self, error: BaseException | None = None) -> None:
        """End the session (the debuggee is terminated); keep its logs when `error` ended the test's block."""
        try:
            self._end_adapter()
        finally:
            if self.logs is not None and not self.logs.closed:
                self.logs.keep(error) if error is not None else self.logs.discard()

    def _end_adapter(self) -> None:
        if self.adapter.poll() is None:
            try:
                self.wait_for_response(self.send("disconnect", {"terminateDebuggee": True}), timeout=10)
            except Exception:
                pass
            try:
                self.adapter.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.adapter.kill()
                self.adapter.wait(timeout=10)

    def __enter__(self) -> DebugSession:
        return self

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        self.close(error if isinstance(error, Exception) else None)
