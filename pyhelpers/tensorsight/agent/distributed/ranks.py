"""Rank awareness under torch.distributed / torchrun: who this process is, and whether it is stopped or waiting.

``install`` calls ``arm(origin)`` in every process the agent enters, the torchrun launcher and each worker alike. In
a worker (``RANK``/``WORLD_SIZE`` in the environment, as torchrun sets them, or a process group initialised by the
program itself) it:

- announces the rank to the hub: a ``rank`` event ``{rank, local_rank, world_size, host, source}``;
- starts a watchdog thread that reports the state of the training thread as ``rank-state`` events (schema in
  ``tensorsight.core.ranks``): ``stopped`` while the debugger holds it, ``waiting`` while it has sat for
  ``rankWaitAfter`` seconds inside a torch collective (DDP's gradient all-reduce inside ``loss.backward()``,
  ``dist.barrier()``...), ``running`` otherwise; one event per change and a heartbeat every ``rankHeartbeat`` seconds.
  The hub combines the ranks' reports with ``core.ranks.classify_ranks``: a rank waiting while another is stopped in
  the debugger is "waiting", not "hung". The worker's own Debug Console also gets one line when it starts waiting;
- honours the launch option ``ranks`` (a list of ranks): on the other ranks the debugger never stops at a line
  breakpoint (``stops_allowed()`` tells other stopping features the same).

The watchdog only reads ``sys._current_frames()`` twice a second; it never touches tensors, never imports torch, and
is hidden from pydevd (not traced, not suspended, not listed), so it keeps reporting while the debugger holds the
rank. Processes that are not distributed pay nothing beyond reading three environment variables.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import FrameType
from typing import Any

from tensorsight.agent.runtime import events, steps
from tensorsight.agent.runtime.guard import never_raise, report_once
from tensorsight.agent.runtime.lazy_import import when_imported
from tensorsight.agent.runtime.options import option
from tensorsight.agent.runtime.user_code import user_frame

POLL_SECONDS = 0.5
DEFAULT_HEARTBEAT_SECONDS = 5.0
DEFAULT_WAIT_AFTER_SECONDS = 2.0

# Where the training thread sits while it waits for other ranks: torch.distributed's collectives, the autograd engine
# (DDP all-reduces gradient buckets from inside backward and waits for them before it returns), and DDP's forward
# (buffer broadcast, unused-parameter bookkeeping). Matched against the module name of the innermost Python frame.
_COLLECTIVE_MODULES = ("torch.distributed", "torch.autograd", "torch.nn.parallel.distributed")

# pydevd's frames while it holds a thread at a stop (breakpoint, step, pause, exception, our sentinel).
_PYDEVD_SUSPEND_FUNCTIONS = frozenset({"do_wait_suspend", "_do_wait_suspend"})


@dataclass(frozen=True)
class RankInfo:
    """This process's place in the job. ``source`` is ``"env"`` (torchrun) or ``"torch.distributed"``."""

    rank: int
    world_size: int
    local_rank: int | None = None
    source: str = "env"


def rank_info_from_env(environ: Mapping[str, str]) -> RankInfo | None:
    """The rank torchrun (or any launcher following its contract) put in the environment; None when absent."""
    rank, world = _non_negative(environ.get("RANK")), _non_negative(environ.get("WORLD_SIZE"))
    if rank is None:
        return None
    return RankInfo(rank, world if world else rank + 1, _non_negative(environ.get("LOCAL_RANK")), "env")


def _non_negative(raw: str | None) -> int | None:
    if raw is None or not raw.strip().isdigit():
        return None
    return int(raw.strip())


_info: RankInfo | None = None
_lock = threading.Lock()
_watchdog: RankWatchdog | None = None


def rank_info() -> RankInfo | None:
    """This process's rank, from the environment or, once the program has initialised it, torch.distributed."""
    if _info is not None:
        return _info
    found = rank_info_from_env(os.environ)
    return found if found is not None else _rank_info_from_torch()


def rank() -> int | None:
    """The global rank of this process, or None when it is not part of a distributed job."""
    info = rank_info()
    return None if info is None else info.rank


def chosen_ranks() -> frozenset[int] | None:
    """The ranks the ``ranks`` launch option limits stops to; None when every rank may stop (or the option is bad)."""
    raw = option("ranks", None)
    if raw is None:
        return None
    values = [raw] if isinstance(raw, int) else raw
    if not isinstance(values, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        report_once("ranks-option", f"ignoring launch option ranks={raw!r}: expected a list of rank numbers, e.g. [1]")
        return None
    return frozenset(values)


def stops_allowed() -> bool:
    """False on a rank the ``ranks`` option leaves out: stopping features (breakpoints, the sentinel) stay quiet."""
    chosen = chosen_ranks()
    if chosen is None:
        return True
    here = rank()
    return here is None or here in chosen


# ---- arming ----------------------------------------------------------------------------------------------------------


@never_raise()
def arm(origin: str = "debugger") -> None:
    """Cheap: reads the environment; in a worker announces the rank and starts the watchdog."""
    info = rank_info_from_env(os.environ)
    if info is not None:
        _become(info, origin)
        return
    # Launched without torchrun's environment (e.g. torch.multiprocessing.spawn + init_process_group(rank=...)):
    # learn the rank from torch.distributed at the first optimizer step after the program initialised it.
    when_imported("torch", lambda _torch: steps.add_step_listener(_learn_rank_at_step))


def _become(info: RankInfo, origin: str) -> None:
    global _info, _watchdog
    with _lock:
        if _info is not None:
            return
        _info = info
    events.emit(
        "rank",
        rank=info.rank,
        local_rank=info.local_rank,
        world_size=info.world_size,
        host=socket.gethostname(),
        source=info.source,
        origin=origin,
    )
    if origin == "debugger" and not stops_allowed():
        _limit_line_breakpoints()
    if info.world_size > 1:
        _watchdog = RankWatchdog(info, _seconds_option("rankHeartbeat", DEFAULT_HEARTBEAT_SECONDS), _wait_after())
        _watchdog.start()


@never_raise()
def _learn_rank_at_step(step: int, optimizer: Any) -> None:
    if _info is not None:
        return
    info = _rank_info_from_torch()
    if info is not None:
        from tensorsight.agent.runtime.install import installed_origin

        _become(info, installed_origin() or "debugger")


def _rank_info_from_torch() -> RankInfo | None:
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return None
        return RankInfo(int(dist.get_rank()), int(dist.get_world_size()), None, "torch.distributed")
    except Exception:  # noqa: BLE001 - a half-initialised group is simply "not yet"
        return None


def _seconds_option(name: str, default: float) -> float:
    raw = option(name, default)
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not raw > 0:
        report_once(f"{name}-option", f"ignoring launch option {name}={raw!r}: expected a positive number of seconds")
        return default
    return float(raw)


def _wait_after() -> float:
    return _seconds_option("rankWaitAfter", DEFAULT_WAIT_AFTER_SECONDS)


# ---- ranks option: line breakpoints only on the chosen ranks ---------------------------------------------------------


def _limit_line_breakpoints() -> None:
    """Make pydevd keep no line breakpoint in this process (the editor still shows them, verified).

    pydevd funnels every change of a file's line breakpoints through ``PyDB.consolidate_breakpoints``; handing it an
    empty set means the breakpoints cost nothing here (pydevd does not even trace those functions). This is private
    pydevd API (checked on debugpy 1.8.x), so a missing hook is reported once and leaves breakpoints as they were.
    """
    py_db_class = _running_pydevd_class()
    original = getattr(py_db_class, "consolidate_breakpoints", None)
    if original is None or getattr(original, "_tensorsight_rank_filter", False):
        if original is None:
            report_once("ranks-hook", "launch option ranks: this debugpy has no breakpoint hook; all ranks stop")
        return

    def consolidate_no_breakpoints(self: Any, filename: Any, id_to_breakpoint: Any, file_to_line: Any) -> Any:
        return original(self, filename, {}, file_to_line)

    consolidate_no_breakpoints._tensorsight_rank_filter = True  # type: ignore[attr-defined]
    py_db_class.consolidate_breakpoints = consolidate_no_breakpoints
    report_once("ranks-limited", f"rank {rank()}: breakpoints are limited to ranks {sorted(chosen_ranks() or [])}")


def _running_pydevd_class() -> Any:
    """pydevd's ``PyDB`` class as the running debugger uses it.

    In the process debugpy launches, pydevd is the module ``pydevd``; in a child it follows (``subProcess``, e.g. a
    torchrun worker) pydevd.py runs as ``__main__`` and calls our plugin before it runs the user's file.
    """
    for name in ("pydevd", "__main__"):
        module = sys.modules.get(name)
        if os.path.basename(str(getattr(module, "__file__", ""))) == "pydevd.py" and hasattr(module, "PyDB"):
            return module.PyDB  # type: ignore[union-attr]
    return None


# ---- watchdog --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ThreadSample:
    """Where the training thread is, read from its innermost Python frame."""

    stopped: bool
    frame_key: tuple[int, int] | None
    collective: str | None
    user_file: str | None
    user_line: int | None


def sample_thread(frame: FrameType | None) -> ThreadSample:
    """Classify one thread's stack: held by the debugger, inside a torch collective, or elsewhere."""
    if frame is None:
        return ThreadSample(False, None, None, None, None)
    stopped = False
    walker: FrameType | None = frame
    while walker is not None:
        code = walker.f_code
        if code.co_name in _PYDEVD_SUSPEND_FUNCTIONS and os.path.basename(code.co_filename) == "pydevd.py":
            stopped = True
            break
        walker = walker.f_back
    user = user_frame(frame)
    module = str(frame.f_globals.get("__name__", ""))
    collective = None
    if any(module == m or module.startswith(m + ".") for m in _COLLECTIVE_MODULES):
        collective = f"{module}.{frame.f_code.co_name}"
    return ThreadSample(
        stopped=stopped,
        frame_key=(id(frame), frame.f_lineno),
        collective=collective,
        user_file=None if user is None else os.path.abspath(user.f_code.co_filename),
        user_line=None if user is None else user.f_lineno,
    )


class RankStateTracker:
    """Turns successive samples of the training thread into ``running``/``stopped``/``waiting`` with a start time.

    "Waiting" needs three things at once: the thread sits on the same line of a torch collective (or of the autograd
    engine, where DDP waits for its all-reduce), no optimizer step happened meanwhile, and the process burns less than
    ``idle_cpu`` of a core, so a long backward that computes is not mistaken for one that waits. Pure bookkeeping
    (the watchdog feeds it samples, the clock and the process CPU time), so it is tested without threads.
    """

    def __init__(self, wait_after: float, idle_cpu: float = 0.5) -> None:
        self.wait_after = wait_after
        self.idle_cpu = idle_cpu
        self.state = "running"
        self.since = 0.0
        self.sample: ThreadSample | None = None
        self._reported = False
        self._still_since = 0.0
        self._still_cpu = 0.0
        self._last: tuple[tuple[int, int] | None, int] | None = None

    def update(self, sample: ThreadSample, step: int, now: float, cpu: float) -> bool:
        """Record a sample taken at ``now`` (wall seconds) with ``cpu`` process CPU seconds; True when changed."""
        position = (sample.frame_key, step)
        if sample.frame_key is None or position != self._last:
            self._still_since, self._still_cpu = now, cpu
        self._last = position
        still_for = now - self._still_since
        idle = still_for > 0 and (cpu - self._still_cpu) / still_for < self.idle_cpu
        if sample.stopped:
            state = "stopped"
        elif sample.collective is not None and still_for >= self.wait_after and idle:
            state = "waiting"
        else:
            state = "running"
        self.sample = sample
        if state == self.state and self._reported:
            return False
        self.since = self._still_since if state == "waiting" else now
        self.state = state
        self._reported = True
        return True


class RankWatchdog:
    """Background reporter of this rank's state; one per process, started when the rank becomes known."""

    def __init__(self, info: RankInfo, heartbeat: float, wait_after: float) -> None:
        self.info = info
        self.heartbeat = heartbeat
        self.tracker = RankStateTracker(wait_after)
        self._main_ident = threading.main_thread().ident
        self._stop = threading.Event()
        self._last_report = 0.0
        self._waiting_announced = False

    def start(self) -> None:
        thread = threading.Thread(target=self._run, name="tensorsight-rank-watchdog", daemon=True)
        # Hidden from pydevd: not traced (no per-line cost), not suspended when the debugger stops the program (it
        # must report "stopped" exactly then), not listed among the user's threads.
        thread.is_pydev_daemon_thread = True  # type: ignore[attr-defined]
        thread.pydev_do_not_trace = True  # type: ignore[attr-defined]
        thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            self.tick(time.time())

    @never_raise()
    def tick(self, now: float) -> None:
        frame = sys._current_frames().get(self._main_ident) if self._main_ident is not None else None
        if frame is None:
            return
        changed = self.tracker.update(sample_thread(frame), steps.current_step(), now, time.process_time())
        if changed or now - self._last_report >= self.heartbeat:
            self._report(now)
        if self.tracker.state == "waiting" and not self._waiting_announced:
            self._announce_waiting()
        self._waiting_announced = self.tracker.state == "waiting"

    def _report(self, now: float) -> None:
        self._last_report = now
        sample = self.tracker.sample
        data: dict[str, Any] = {
            "rank": self.info.rank,
            "local_rank": self.info.local_rank,
            "world_size": self.info.world_size,
            "state": self.tracker.state,
            "since": self.tracker.since,
            "heartbeat": self.heartbeat,
            "step": steps.current_step(),
        }
        if sample is not None and sample.user_file is not None:
            data["file"], data["line"] = sample.user_file, sample.user_line
        if self.tracker.state == "waiting" and sample is not None:
            data["blocked_in"] = sample.collective
        events.emit("rank-state", **data)

    def _announce_waiting(self) -> None:
        sample = self.tracker.sample
        where = ""
        if sample is not None and sample.user_file is not None:
            where = f" at {os.path.basename(sample.user_file)}:{sample.user_line}"
        _write_console(
            f"[tensorsight] rank {self.info.rank} is waiting in {sample.collective if sample else 'a collective'}"
            f"{where}: another rank has not reached it yet (stopped in the debugger, still computing, or hung)\n"
        )


def _write_console(text: str) -> None:
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - stderr may be closed in the user's process
        pass


__all__ = [
    "RankInfo",
    "RankStateTracker",
    "RankWatchdog",
    "ThreadSample",
    "arm",
    "chosen_ranks",
    "rank",
    "rank_info",
    "rank_info_from_env",
    "sample_thread",
    "stops_allowed",
]
