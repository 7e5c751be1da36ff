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

The rank itself comes from ``agent.runtime.identity`` (which this module tells once it learned it); the pydevd
internals used here (breakpoint patch, thread flags, suspend detection) live in ``agent.debugger``. The watchdog only
reads ``sys._current_frames()`` twice a second; it never touches tensors, never imports torch, and
is hidden from pydevd (not traced, not suspended, not listed), so it keeps reporting while the debugger holds the
rank. Processes that are not distributed pay nothing beyond reading three environment variables.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from dataclasses import dataclass
from types import FrameType
from typing import Any

from tensorsight.agent.debugger.breakpoints import drop_line_breakpoints
from tensorsight.agent.debugger.threads import held_by_debugger, hide_from_debugger
from tensorsight.agent.runtime import events, identity, steps
from tensorsight.agent.runtime.guard import never_raise, report_once
from tensorsight.agent.runtime.identity import RankInfo
from tensorsight.agent.runtime.lazy_import import when_imported
from tensorsight.agent.runtime.options import option
from tensorsight.agent.runtime.user_code import user_frame
from tensorsight.core import protocol
from tensorsight.core.l10n import t
from tensorsight.core.protocol import option_default

POLL_SECONDS = 0.5

# Where the training thread sits while it waits for other ranks: torch.distributed's collectives, the autograd engine
# (DDP all-reduces gradient buckets from inside backward and waits for them before it returns), and DDP's forward
# (buffer broadcast, unused-parameter bookkeeping). Matched against the module name of the innermost Python frame.
_COLLECTIVE_MODULES = ("torch.distributed", "torch.autograd", "torch.nn.parallel.distributed")

_watchdog: RankWatchdog | None = None


def chosen_ranks() -> frozenset[int] | None:
    """The ranks the ``ranks`` launch option limits stops to; None when every rank may stop (or the option is bad)."""
    raw = option("ranks")
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
    here = identity.rank()
    return here is None or here in chosen


# ---- arming ----------------------------------------------------------------------------------------------------------


@never_raise()
def arm(origin: str = "debugger") -> None:
    """Cheap: reads the environment; in a worker announces the rank and starts the watchdog."""
    info = identity.rank_info_from_env(os.environ)
    if info is not None:
        _become(info, origin)
        return
    # Launched without torchrun's environment (e.g. torch.multiprocessing.spawn + init_process_group(rank=...)):
    # learn the rank from torch.distributed at the first optimizer step after the program initialised it.
    when_imported("torch", lambda _torch: steps.add_step_listener(_learn_rank_at_step))


def _become(info: RankInfo, origin: str) -> None:
    global _watchdog
    if not identity.learn(info):
        return
    events.send(
        protocol.RankEvent(
            rank=info.rank,
            local_rank=info.local_rank,
            world_size=info.world_size,
            host=socket.gethostname(),
            source=info.source,
            origin=origin,
        )
    )
    if origin == "debugger" and not stops_allowed():
        _limit_line_breakpoints()
    if info.world_size > 1:
        _watchdog = RankWatchdog(info, _seconds_option("rankHeartbeat"), _wait_after())
        _watchdog.start()


@never_raise()
def _learn_rank_at_step(step: int, optimizer: Any) -> None:
    if identity.learned() is not None:
        return
    info = identity.rank_info_from_torch()
    if info is not None:
        from tensorsight.agent.runtime.install import installed_origin

        _become(info, installed_origin() or "debugger")


def _seconds_option(name: str) -> float:
    default: float = option_default(name)
    raw = option(name)
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not raw > 0:
        report_once(f"{name}-option", f"ignoring launch option {name}={raw!r}: expected a positive number of seconds")
        return default
    return float(raw)


def _wait_after() -> float:
    return _seconds_option("rankWaitAfter")


# ---- ranks option: line breakpoints only on the chosen ranks ---------------------------------------------------------


def _limit_line_breakpoints() -> None:
    """Make pydevd keep no line breakpoint in this process (the editor still shows them, verified)."""
    if not drop_line_breakpoints():
        report_once("ranks-hook", "launch option ranks: this debugpy has no breakpoint hook; all ranks stop")
        return
    chosen = sorted(chosen_ranks() or [])
    report_once("ranks-limited", f"rank {identity.rank()}: breakpoints are limited to ranks {chosen}")


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
    stopped = held_by_debugger(frame)
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
        hide_from_debugger(thread).start()

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
        located = sample is not None and sample.user_file is not None
        events.send(
            protocol.RankStateEvent(
                rank=self.info.rank,
                local_rank=self.info.local_rank,
                world_size=self.info.world_size,
                state=self.tracker.state,
                since=self.tracker.since,
                heartbeat=self.heartbeat,
                step=steps.current_step(),
                file=sample.user_file if located and sample is not None else None,
                line=sample.user_line if located and sample is not None else None,
                blocked_in=sample.collective if self.tracker.state == "waiting" and sample is not None else None,
            )
        )

    def _announce_waiting(self) -> None:
        sample = self.tracker.sample
        where = ""
        if sample is not None and sample.user_file is not None:
            where = t(" at {0}", f"{os.path.basename(sample.user_file)}:{sample.user_line}")
        message = t(
            "rank {rank} is waiting in {collective}{where}: another rank has not reached it yet (stopped in the "
            "debugger, still computing, or hung)",
            rank=self.info.rank,
            collective=sample.collective if sample else t("a collective"),
            where=where,
        )
        _write_console(f"[tensorsight] {message}\n")


def _write_console(text: str) -> None:
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - stderr may be closed in the user's process
        pass


__all__ = [
    "RankStateTracker",
    "RankWatchdog",
    "ThreadSample",
    "arm",
    "chosen_ranks",
    "sample_thread",
    "stops_allowed",
]
