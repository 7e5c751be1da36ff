"""An unattended run's hold at its first NaN/Inf (``python -m tensorsight watch``): listen, say how to attach, wait.

``cli/watch.py`` calls ``configure`` before the script runs; ``sentinel.records.report`` calls ``hold`` at the first
birth, in the user's frame that made it (so the thread stays on the producing line). ``hold`` starts debugpy's
listener on the configured loopback address (nothing is listening before the NaN, so a run nobody watches costs no
debugger), prints and logs one line with the step, the op and how to attach, and blocks in
``debugpy.wait_for_client`` (which returns once an editor attached and sent ``configurationDone``) until a client
comes or the wait times out. Attached, the caller then stops in the debugger at the producing line exactly as a
launched session does (``pause.stop_in_frame``). Timed out, the wait is cancelled, the configured ``on_timeout``
callback writes the doctor's report, and the run either continues without a debugger or ends.

Every failure (no debugpy in the environment, the port in use) is one clear line, and the run goes on: a long job is
never lost to its watcher.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

from tensorsight.agent.runtime.guard import say
from tensorsight.core.l10n import t

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 5678
DEFAULT_WAIT_SECONDS = 3600.0
ON_TIMEOUT_CHOICES = ("continue", "exit")


@dataclass
class WaitPlan:
    """Where to listen, how long to wait, and what to do when nobody came."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    wait_seconds: float = DEFAULT_WAIT_SECONDS
    on_timeout: str = "continue"  # "continue": run on without a debugger; "exit": end the process
    # writes the report of what was found so far; with exit=True it also ends the process (never returns)
    report: Callable[[bool], None] | None = None


_plan: WaitPlan | None = None
_held_once = False


def configure(plan: WaitPlan) -> None:
    """Arm the hold for this process (the watch command, before the script runs)."""
    global _plan, _held_once
    _plan, _held_once = plan, False


def armed() -> bool:
    return _plan is not None


def attach_hint(host: str, port: int) -> str:
    """How to reach the waiting process: the editor's attach entry, and the SSH tunnel from another machine."""
    return t(
        'attach with a "tensorsight" debug configuration, "request": "attach",'
        ' "connect": {"host": "{0}", "port": {1}} (from another machine: ssh -L {1}:{0}:{1} this-host)',
        host,
        port,
    )


def hold(headline: str) -> bool:
    """Wait for a debugger at the first NaN/Inf; True when one attached (the caller then stops in it), False when the
    run goes on (or ends) without one. ``headline`` is the birth's line (what, where, which step)."""
    global _held_once
    plan = _plan
    if plan is None or _held_once:
        return False
    _held_once = True
    try:
        import debugpy  # type: ignore[import-not-found]
    except ImportError:
        say(t("{0}; cannot wait for a debugger: debugpy is not installed here (pip install debugpy)", headline))
        _give_up(plan)
        return False
    # pydevd's warning about frozen modules is for breakpoints set before start-up; this session begins at a stop
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    try:
        debugpy.listen((plan.host, plan.port))
    except Exception as exc:  # noqa: BLE001 - a port in use, an address this machine does not have
        say(t("{0}; cannot listen on {1}:{2} ({3}): use --port to pick another", headline, plan.host, plan.port, exc))
        _give_up(plan)
        return False
    from tensorsight.agent.debugger import attach

    attach.arm("watch")  # pydevd is loaded now: the attaching editor's hub and options are read from its request
    say(
        t(
            "{0}; waiting {1} s for a debugger on {2}:{3}: {4}",
            headline,
            f"{plan.wait_seconds:g}",
            plan.host,
            plan.port,
            attach_hint(plan.host, plan.port),
        )
    )
    if not _wait_for_client(debugpy, plan.wait_seconds):
        waited = f"{plan.wait_seconds:g}"
        if plan.on_timeout == "exit":
            say(t("no debugger attached within {0} s; the run ends (--on-timeout exit)", waited))
        else:
            say(t("no debugger attached within {0} s; the run goes on without one", waited))
        _give_up(plan)
        return False
    return True


def _wait_for_client(debugpy: object, seconds: float) -> bool:
    """``debugpy.wait_for_client`` with a deadline (a timer cancels the wait); True when a client attached."""
    waiter = debugpy.wait_for_client  # type: ignore[attr-defined]
    timer = threading.Timer(seconds, lambda: _cancel(waiter))
    timer.daemon = True
    timer.start()
    try:
        waiter()
    except Exception:  # noqa: BLE001 - debugpy refused the wait: no client
        return False
    finally:
        timer.cancel()
    is_connected = getattr(debugpy, "is_client_connected", None)
    return bool(is_connected()) if is_connected is not None else False


def _cancel(waiter: object) -> None:
    try:
        waiter.cancel()  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - the wait ended meanwhile
        pass


def _give_up(plan: WaitPlan) -> None:
    """Nobody attached: write the report so far, then go on or end as configured."""
    if plan.report is not None:
        plan.report(plan.on_timeout == "exit")
