"""Runs the static analysis of open documents in a child process (``analysis_worker``), one request at a time;
documents of ordinary size (``diagnostics.THREAD_ANALYSIS_MAX_BYTES``, about 5,000 lines: a parse of tens of
milliseconds), and documents over the size cap (no parse at all), in a worker thread, so they never wait behind a
long one nor for the child to start (it starts with the first larger document: no memory is spent on it otherwise).

``server`` awaits ``analyze`` for each open/changed document. The child is started on first use with the server's
interpreter, isolated (``-I``) and given the server's ``sys.path``; it is recycled (stopped, started again on the next
request) when it reports more than ``RECYCLE_RSS_BYTES`` resident, when an analysis takes longer than
``ANALYSIS_TIMEOUT_SECONDS`` (killed; that document gets no static findings this time), after ``IDLE_SECONDS``
without a request and when the last document closes (``close``), so the memory a large file's syntax trees took goes
back to the system. When the child cannot be started at all, the analysis runs in a worker thread of the server.
"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import sys
from collections.abc import Callable, Mapping, Sequence

from tensorsight.server.analysis_worker import HEADER
from tensorsight.server.diagnostics import (
    THREAD_ANALYSIS_MAX_BYTES,
    ProjectResult,
    analyze_document,
    loops_of,
    too_large,
)
from tensorsight.server.runtime_view import normalize_path
from tensorsight.server.source_files import project_reader

ANALYSIS_TIMEOUT_SECONDS = 60.0
IDLE_SECONDS = 30.0  # a child with no request for this long is stopped (a large file was closed or left alone)
RECYCLE_RSS_BYTES = 256 << 20

Logger = Callable[[str, str], None]
Loops = list[tuple[int, int]]

_BOOT = (
    "import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
    "from tensorsight.server.analysis_worker import main; main()"
)


class AnalysisFailed(Exception):
    """The child died, timed out or reported an error; the message says which."""


class AnalysisProcess:
    """The analysis child of one server; lives on the server's event loop."""

    def __init__(self, log: Logger) -> None:
        self._log = log
        self._process: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()
        self._unavailable = False  # the child could not be started: threads from now on
        self._idle: asyncio.TimerHandle | None = None
        self._closing: asyncio.Future[None] | None = None  # the idle stop in progress (kept referenced)
        self.started = 0  # children started so far

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None and self._process.returncode is None else None

    async def analyze(
        self,
        source: str,
        path: str,
        buffers: Mapping[str, str],
        folders: Sequence[str],
        roots: Sequence[str],
        still_wanted: Callable[[], bool] = lambda: True,
    ) -> tuple[ProjectResult, Loops] | None:
        """The document's analysis and training loops; None when ``still_wanted()`` turned false while it waited
        for an earlier analysis to finish. Raises ``AnalysisFailed``. A document of ordinary size
        (``THREAD_ANALYSIS_MAX_BYTES``) is analysed in a thread at once, never queued behind a large one."""
        if len(source) <= THREAD_ANALYSIS_MAX_BYTES or too_large(source) is not None:  # the latter: no parse at all
            return await asyncio.to_thread(_in_thread, source, path, dict(buffers), list(folders), list(roots))
        async with self._lock:
            if self._idle is not None:
                self._idle.cancel()
            self._idle = asyncio.get_running_loop().call_later(IDLE_SECONDS, self._stop_when_idle)
            if not still_wanted():
                return None
            request = (source, path, dict(buffers), list(folders), list(roots))
            if self._unavailable:
                return await asyncio.to_thread(_in_thread, *request)
            process = await self._ensure()
            if process is None:
                return await asyncio.to_thread(_in_thread, *request)
            try:
                reply = await asyncio.wait_for(self._call(process, request), ANALYSIS_TIMEOUT_SECONDS)
            except asyncio.TimeoutError:
                await self._stop()
                raise AnalysisFailed(f"took longer than {ANALYSIS_TIMEOUT_SECONDS:.0f} s") from None
            except (ConnectionError, OSError, asyncio.IncompleteReadError, EOFError, pickle.UnpicklingError) as exc:
                await self._stop()
                raise AnalysisFailed(f"the analysis process ended ({type(exc).__name__})") from None
            result, loops, rss = reply[:3]
            if isinstance(rss, int) and rss > RECYCLE_RSS_BYTES:
                await self._stop()
            if not isinstance(result, ProjectResult) or not isinstance(loops, list):
                raise AnalysisFailed(str(reply[3]) if len(reply) > 3 else "no result")
            return result, loops

    def _stop_when_idle(self) -> None:
        if self._lock.locked():  # an analysis is running: look again later
            self._idle = asyncio.get_running_loop().call_later(IDLE_SECONDS, self._stop_when_idle)
            return
        self._idle = None
        self._closing = asyncio.ensure_future(self.close())

    async def close(self) -> None:
        """Stop the child (its memory goes back to the system); the next ``analyze`` starts another."""
        async with self._lock:
            await self._stop()

    def kill(self) -> None:
        """At shutdown: end the child at once, even mid-analysis (nothing waits for its answer any more)."""
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            process.kill()

    async def _ensure(self) -> asyncio.subprocess.Process | None:
        if self._process is not None and self._process.returncode is None:
            return self._process
        try:
            self._process = await asyncio.create_subprocess_exec(
                sys.executable, "-I", "-c", _BOOT, json.dumps(sys.path),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=None,
                cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
            )  # fmt: skip
        except (OSError, ValueError, NotImplementedError) as exc:
            self._unavailable = True
            self._log("warning", f"static analysis: no child process ({exc!r}); analysing in a thread instead")
            return None
        self.started += 1
        return self._process

    async def _call(self, process: asyncio.subprocess.Process, request: tuple[object, ...]) -> tuple[object, ...]:
        assert process.stdin is not None and process.stdout is not None
        payload = await asyncio.to_thread(pickle.dumps, request, pickle.HIGHEST_PROTOCOL)
        process.stdin.write(HEADER.pack(len(payload)) + payload)
        await process.stdin.drain()
        (size,) = HEADER.unpack(await process.stdout.readexactly(HEADER.size))
        data = await process.stdout.readexactly(size)
        reply = pickle.loads(data)  # from our own child, about the user's own files
        if not isinstance(reply, tuple) or len(reply) < 3:
            raise EOFError("malformed reply")
        return reply

    async def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        try:
            if process.stdin is not None:
                process.stdin.close()
            await asyncio.wait_for(process.wait(), 2.0)
        except (asyncio.TimeoutError, OSError, ConnectionError):
            process.kill()
            await process.wait()


def _in_thread(
    source: str, path: str, buffers: Mapping[str, str], folders: Sequence[str], roots: Sequence[str]
) -> tuple[ProjectResult, Loops]:
    read = project_reader(buffers, folders, normalize_path)
    return analyze_document(source, path, read, roots), loops_of(source)
