"""``tensorsight.Timer`` (Spanish alias ``Cronometro``): the lesson's timer, as a context manager and a decorator.

Used by people in their own code (``with tensorsight.Timer("data"): batch = next(it)``) and re-exported by the
toolbox. CUDA-aware: when the program has initialised CUDA, the device is synchronised on entry and exit so the time
covers the kernels the block launched, not just their launch; on CPU nothing is synchronised. Each measurement is
printed (unless ``verbose=False``), kept on the timer (``elapsed``, ``total``, ``calls``) and published as a
``timer`` event so the editor can show it. Time is read from ``debugger.holds.program_clock``: a breakpoint inside a
timed block does not count, so the figure is what the program took, as the phase clock reports it.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

from tensorsight.agent.debugger.holds import program_clock
from tensorsight.agent.runtime.events import send
from tensorsight.agent.runtime.guard import never_raise
from tensorsight.agent.runtime.user_code import user_location
from tensorsight.core import protocol

F = TypeVar("F", bound=Callable[..., Any])


@never_raise()
def _synchronize_cuda() -> None:
    """Wait for queued CUDA work, only if the program itself uses CUDA (never import or initialise it for them)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_available() and cuda.is_initialized():
        cuda.synchronize()


class Timer:
    """Measure a block (``with Timer("forward"):``) or every call of a function (``@Timer("step")``).

    ``sync``: None (default) synchronises CUDA only when the program uses it; True/False force it on/off.
    ``verbose``: print ``[Timer] name: 12.3 ms`` after each measurement. ``elapsed`` holds the last measurement in
    seconds, ``total`` and ``calls`` accumulate over uses of the same timer.
    """

    def __init__(self, name: str = "block", *, sync: bool | None = None, verbose: bool = True) -> None:
        self.name = str(name)
        self.sync = sync
        self.verbose = verbose
        self.elapsed = 0.0
        self.total = 0.0
        self.calls = 0
        self._starts: list[float] = []

    def _maybe_sync(self) -> None:
        if self.sync is None or self.sync:
            _synchronize_cuda()

    def __enter__(self) -> Timer:
        self._maybe_sync()
        self._starts.append(program_clock())
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._maybe_sync()
        end = program_clock()
        start = self._starts.pop() if self._starts else end
        self._record(end - start)

    @never_raise()
    def _record(self, seconds: float) -> None:
        self.elapsed = seconds
        self.total += seconds
        self.calls += 1
        where = user_location()
        file, line = where if where is not None else (None, None)
        send(protocol.TimerEvent(name=self.name, seconds=seconds, file=file, line=line))
        if self.verbose:
            print(f"[Timer] {self.name}: {format_seconds(seconds)}", flush=True)

    @property
    def mean(self) -> float:
        """Mean seconds per measurement (0 before the first one)."""
        return self.total / self.calls if self.calls else 0.0

    def __call__(self, fn: F) -> F:
        """Use the timer as a decorator: every call of ``fn`` is one measurement."""

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return timed  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"Timer({self.name!r}, last={format_seconds(self.elapsed)}, calls={self.calls})"


def format_seconds(seconds: float) -> str:
    """``0.0123`` -> ``12.3 ms``; microseconds, milliseconds or seconds, whichever reads best."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1.0:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.3f} s"


Cronometro = Timer
