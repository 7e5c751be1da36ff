"""Runs a user's training script in this process as ``__main__``, within limits, and says how it ended.

Used by every headless command (doctor, shapes, profile, overfit; see ``cli.prelude``) and by the agent's profiling
(``agent.measurement.profiling``), which is why it lives in the agent's runtime, not in ``cli``. The script runs like
``python script.py args`` (own ``sys.argv``, its folder first on ``sys.path``, its PEP 263 source encoding honoured),
compiled here so a tool can transform its code first (line-level profiling swaps in instrumented function bodies).

Stopping is a ``StopScript`` raised inside the script: a ``BaseException``, so a script's ``except Exception`` does not
swallow it. A tool raises it from a hook (torch's optimizer step hook); ``Limits`` raise it after ``max_steps``
optimizer steps or ``timeout`` seconds (delivered to the script's thread between two bytecodes). A script that does
not stop within ``GRACE_S`` after its time is up (blocked in a long C call, or swallowing every exception), and a
script that ends the process itself with ``os._exit(n)``, never returns here: the tool's ``on_hard_exit`` then gets
the outcome so far, reports it, and names the exit status the process ends with.

With ``Limits.stop_on_signals`` (the doctor) an interrupted run is a stopped run too: Ctrl+C (``KeyboardInterrupt``)
and SIGTERM (what an editor sends when its user cancels; raised as ``Interrupted`` in the script's thread) end it with
``limit`` "interrupted" and the signal's number, so the tool still reports what ran; a script that does not unwind
within ``GRACE_S`` of the SIGTERM, or a second SIGTERM, is reported and ended like a script past its timeout. Where the
script was when a limit or a signal stopped it is printed on stderr as a traceback that starts at the script and ends
at its innermost frame of the user's code (``user_traceback``), never in ours.
"""

from __future__ import annotations

import builtins
import ctypes
import os
import signal
import sys
import threading
import tokenize
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tensorsight.agent.runtime import steps
from tensorsight.agent.runtime.lazy_import import when_imported
from tensorsight.agent.runtime.user_code import is_agent_file, is_user_file
from tensorsight.core.l10n import t

GRACE_S = 2.0  # after the timeout, how long the script gets to unwind before the process is ended for it


class StopScript(BaseException):
    """Ends the user's script once the tool has what it needs."""


class TimeLimitReached(StopScript):
    """``Limits.timeout`` seconds have passed (raised asynchronously in the script's thread)."""


class StepLimitReached(StopScript):
    """``Limits.max_steps`` optimizer steps have completed."""


class Interrupted(StopScript):
    """SIGTERM arrived while the script ran (``Limits.stop_on_signals``)."""


@dataclass(frozen=True)
class Limits:
    """When to stop the script even though it has not ended: after ``timeout`` seconds or ``max_steps`` optimizer
    steps (None: no limit)."""

    timeout: float | None = None
    max_steps: int | None = None
    stop_on_signals: bool = False  # Ctrl+C and SIGTERM stop the run with a report instead of ending the process


@dataclass
class ScriptOutcome:
    """How the run ended: ``stopped`` when a tool or a limit stopped it, ``limit`` ("timeout" / "max-steps") when a
    limit did, ``error`` when the script itself failed, ``exit_status`` when it ended the process (``os._exit``)
    or had to be ended for it (it did not stop within ``GRACE_S`` of its timeout or of a SIGTERM)."""

    steps: int
    stopped: bool
    error: str = ""
    exception: BaseException | None = None
    limit: str = ""
    exit_status: int | None = None
    signal_number: int | None = None  # the signal that interrupted the run (limit "interrupted")


HardExit = Callable[[ScriptOutcome], int]  # reports the outcome; returns the status the process exits with


def read_source(path: str) -> str:
    """The script's text, decoded as Python decodes it (a BOM, a ``# -*- coding: ... -*-`` line, else UTF-8).

    Raises ``OSError``, or ``SyntaxError`` for an unknown encoding or bytes the declared encoding cannot decode.
    """
    try:
        with tokenize.open(path) as handle:
            return handle.read()
    except UnicodeDecodeError as exc:
        raise SyntaxError(f"{os.path.basename(path)} is not valid {exc.encoding}: {exc.reason}") from exc


def compile_script(path: str) -> types.CodeType:
    """The script's code object; the source bytes go to ``compile``, which applies the PEP 263 encoding itself."""
    with open(path, "rb") as handle:
        source = handle.read()
    return compile(source, os.path.abspath(path), "exec", dont_inherit=True)


def after_torch(callback: Callable[[Any], None]) -> None:
    """Arm the shared step counter, then call ``callback(torch)`` once the script imports torch."""
    steps.arm("tool")
    when_imported("torch", callback)


def run_script(
    path: str,
    args: list[str],
    code: types.CodeType | None = None,
    *,
    limits: Limits | None = None,
    on_hard_exit: HardExit | None = None,
) -> ScriptOutcome:
    """Execute the script until it ends, a hook raises ``StopScript`` or a limit is reached; never raises for the
    script's errors. With ``on_hard_exit``, a script that ends the process (or must be ended) is reported first."""
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": os.path.abspath(path), "__builtins__": builtins, "__cached__": None})
    saved_main, saved_argv = sys.modules.get("__main__"), sys.argv[:]
    folder = os.path.dirname(os.path.abspath(path))
    outcome = ScriptOutcome(steps=0, stopped=False)
    watch = _Watch(limits or Limits(), outcome, on_hard_exit)
    sys.modules["__main__"] = main
    sys.argv = [path, *args]
    sys.path.insert(0, folder)
    try:
        try:
            watch.start()
            exec(code if code is not None else compile_script(path), main.__dict__)
        finally:
            watch.stop()
    except StopScript as stop:
        outcome.stopped = True
        if isinstance(stop, TimeLimitReached):
            outcome.limit = "timeout"
            _print_stopped_here(stop, path, t("the script was stopped by --timeout here"))
        elif isinstance(stop, StepLimitReached):
            outcome.limit = "max-steps"
        elif isinstance(stop, Interrupted):
            outcome.limit, outcome.signal_number = "interrupted", signal.SIGTERM
            _print_stopped_here(stop, path, t("the script was interrupted (SIGTERM) here"))
    except KeyboardInterrupt as interrupt:
        if not watch.limits.stop_on_signals:
            outcome.error, outcome.exception = "KeyboardInterrupt", interrupt
            traceback.print_exc(file=sys.stderr)
        else:
            outcome.stopped, outcome.limit, outcome.signal_number = True, "interrupted", signal.SIGINT
            _print_stopped_here(interrupt, path, t("the script was interrupted (Ctrl+C) here"))
    except SystemExit as exc:
        if exc.code not in (None, 0):
            outcome.error = f"script exited with status {exc.code}"
    except BaseException as exc:  # noqa: BLE001 - the user's script may raise anything
        outcome.error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        outcome.exception = exc
        traceback.print_exc(file=sys.stderr)
    finally:
        watch.stop()  # again: a stop delivered while the first call ran may have cut it short
        sys.argv = saved_argv
        if sys.path and sys.path[0] == folder:
            del sys.path[0]
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    if watch.timed_out and not outcome.limit:  # the script caught the stop and then ended by itself
        outcome.stopped, outcome.limit = True, "timeout"
    if watch.terminated and not outcome.limit:  # the script caught the SIGTERM and then ended by itself
        outcome.stopped, outcome.limit, outcome.signal_number = True, "interrupted", signal.SIGTERM
    outcome.steps = steps.current_step()
    return outcome


class _Watch:
    """The limits and the hard-exit report of one run: a step listener, a timer thread and an ``os._exit`` hook,
    all taken out again by ``stop``."""

    def __init__(self, limits: Limits, outcome: ScriptOutcome, on_hard_exit: HardExit | None) -> None:
        self.limits = limits
        self.outcome = outcome
        self.on_hard_exit = on_hard_exit
        self._timed_out = False
        self._lock = threading.Lock()
        self._running = False
        self._finished = threading.Event()
        self._thread_id = threading.get_ident()
        self._pid = os.getpid()
        self._real_exit: Callable[[int], Any] | None = None
        self._ending = False
        self._terminated = False
        self._saved_sigterm: Any = None

    @property
    def timed_out(self) -> bool:
        return self._timed_out

    @property
    def terminated(self) -> bool:
        return self._terminated

    def start(self) -> None:
        self._running = True
        if self.limits.max_steps is not None:
            steps.add_step_listener(self._on_step)
        if self.limits.timeout is not None:
            threading.Thread(target=self._time_out, name="tensorsight-timeout", daemon=True).start()
        if self.on_hard_exit is not None:
            self._real_exit = os._exit
            os._exit = self._exit  # type: ignore[assignment]
        if self.limits.stop_on_signals and threading.current_thread() is threading.main_thread():
            self._saved_sigterm = signal.signal(signal.SIGTERM, self._on_sigterm)

    def stop(self) -> None:
        with self._lock:
            self._running = False
            fired = self._timed_out
        self._finished.set()
        if fired:
            _cancel_pending_exception(self._thread_id)
        steps.remove_step_listener(self._on_step)
        if self._real_exit is not None and os._exit is self._exit:  # type: ignore[comparison-overlap]
            os._exit = self._real_exit  # type: ignore[assignment]
        if self._saved_sigterm is not None and signal.getsignal(signal.SIGTERM) == self._on_sigterm:
            signal.signal(signal.SIGTERM, self._saved_sigterm)

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        """SIGTERM while the script runs: stop it (``Interrupted``) and give it ``GRACE_S`` to unwind; a second one,
        or a script still running after that, is reported and the process ended."""
        if not self._running:
            return
        if self._terminated:
            self._end_interrupted()
        self._terminated = True
        threading.Thread(target=self._grace_after_sigterm, name="tensorsight-sigterm", daemon=True).start()
        raise Interrupted

    def _grace_after_sigterm(self) -> None:
        if not self._finished.wait(GRACE_S):
            self._end_interrupted()

    def _end_interrupted(self) -> None:
        if self.on_hard_exit is None:
            return
        self.outcome.stopped, self.outcome.limit = True, "interrupted"
        self.outcome.signal_number = signal.SIGTERM
        self.outcome.error = f"the script did not stop within {GRACE_S:g} s of SIGTERM; the process was ended"
        self._end_process(None)

    def _on_step(self, step: int, optimizer: Any) -> None:
        if self._running and self.limits.max_steps is not None and step >= self.limits.max_steps:
            raise StepLimitReached

    def _time_out(self) -> None:
        if self._finished.wait(self.limits.timeout):
            return
        with self._lock:
            if not self._running:
                return
            self._timed_out = True
            _raise_in_thread(self._thread_id, TimeLimitReached)
        if self._finished.wait(GRACE_S) or self.on_hard_exit is None:
            return
        # the script did not unwind (a long C call, or it swallowed the stop): report now and end the process
        self.outcome.stopped, self.outcome.limit = True, "timeout"
        self.outcome.error = f"the script did not stop within {GRACE_S:g} s of the timeout; the process was ended"
        self._end_process(None)

    def _exit(self, status: int) -> None:
        """``os._exit`` while the script runs: report what was found, then end the process as the script asked."""
        if os.getpid() != self._pid or self._ending:  # a forked worker, or our own exit
            (self._real_exit or os._exit)(status)
        self.outcome.exit_status = int(status)
        if status:
            self.outcome.error = f"script ended the process with os._exit({status})"
        self._end_process(status)

    def _end_process(self, status: int | None) -> None:
        self._ending = True
        self.outcome.steps = steps.current_step()
        code = status if status is not None else 1
        try:
            if self.on_hard_exit is not None:
                code = self.on_hard_exit(self.outcome)
        except BaseException:  # noqa: BLE001 - the process ends either way
            traceback.print_exc(file=sys.stderr)
        finally:
            for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
                try:
                    if stream is not None:
                        stream.flush()
                except Exception:  # noqa: BLE001
                    pass
            (self._real_exit or os._exit)(code)


def user_traceback(exc: BaseException, script: str) -> list[traceback.FrameSummary]:
    """Where ``exc`` found the script, as the user reads it: from the script's first frame (the runner's ``exec``
    left out) to the innermost frame of the user's code, our own frames in between left out. Empty when no frame of
    the user's is on it."""
    # our code objects named for the user's line (``<tensorsight op call>``, compiled with the user's file name) are
    # ours too: they would repeat the user's line below the library frames that called them
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.name.startswith("<tensorsight")]
    script = os.path.abspath(script)
    start = next((i for i, frame in enumerate(frames) if os.path.abspath(frame.filename) == script), None)
    if start is None:
        return []
    user = [i for i in range(start, len(frames)) if is_user_file(frames[i].filename)]
    return [frame for frame in frames[start : user[-1] + 1] if not is_agent_file(frame.filename)]


def _print_stopped_here(exc: BaseException, script: str, heading: str) -> None:
    frames = user_traceback(exc, script)
    if not frames:
        return
    try:
        sys.stderr.write(heading + " " + t("(most recent call last):") + "\n")
        sys.stderr.write("".join(traceback.format_list(frames)))
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - stderr may be closed; the report matters more
        pass


def _raise_in_thread(thread_id: int, kind: type[BaseException]) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(kind))


def _cancel_pending_exception(thread_id: int) -> None:
    """Withdraw a stop the timer raised but the thread had not received yet (the script ended just then)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), None)
