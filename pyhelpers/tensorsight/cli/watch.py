"""The unattended run: ``python -m tensorsight watch [--port P] script.py [args...]``.

Runs the script in this process as ``__main__`` (like ``python script.py``, the doctor's way) with the NaN/Inf
sentinel armed and no debugger. At the first NaN/Inf the thread is held in the user's frame at the producing line
(``agent.debugger.waiting``): debugpy starts listening on ``--host`` (loopback by default) and ``--port``, one line on
stderr says the step, the op and how to attach, and the run waits ``--wait-timeout`` seconds. An editor that
attaches ("Debug Training" with ``"request": "attach"``) lands on that line with Variables, the finding and the
viewer's link, as if the run had been launched under the debugger; Continue runs on under it. Nobody attached: the
report of what was found so far is written on stderr, and the run continues (``--on-timeout continue``, the default)
or ends with status 3 (``--on-timeout exit``).

The script's output stays its own (stdout and stderr); our lines start with ``[tensorsight]``; the report is also
written when the run ends. Exit status: the script's (0, or 1 when it raised), 2 when the command was misused.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from tensorsight.agent.debugger import waiting
from tensorsight.agent.runtime import script_runner
from tensorsight.agent.runtime.script_runner import Limits, ScriptOutcome
from tensorsight.cli import prelude
from tensorsight.cli.doctor import DoctoredRun, build_document, print_report
from tensorsight.core.l10n import t

# What the unattended run arms: the sentinel, within its budget (``sentinel.budget``), and not the doctor's full
# observation (shapes, measurement, leakage), which a long run would pay on every step; ``--set measure=true`` etc.
# turns any of them back on.
WATCH_OPTIONS: dict[str, Any] = {
    "breakOnNonFinite": True,
    "observeShapes": False,
    "measure": False,
    "checkLeakage": False,
}
EXIT_NOBODY_ATTACHED = 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default=waiting.DEFAULT_HOST, help="address to listen on (default: %(default)s)")
    parser.add_argument(
        "--port",
        type=int,
        default=waiting.DEFAULT_PORT,
        help="port to listen on at the first NaN (default: %(default)s)",
    )
    parser.add_argument(
        "--wait-timeout",
        type=float,
        default=waiting.DEFAULT_WAIT_SECONDS,
        metavar="SECONDS",
        help="how long to wait for a debugger at the first NaN/Inf (default: %(default)g)",
    )
    parser.add_argument(
        "--on-timeout",
        choices=waiting.ON_TIMEOUT_CHOICES,
        default="continue",
        help="when nobody attached in time: go on without a debugger, or end the run (status 3)",
    )
    prelude.add_set_argument(parser)
    prelude.add_script_arguments(parser, "the training script to run")


def plan_of(args: argparse.Namespace) -> waiting.WaitPlan:
    """The hold's settings; raises ValueError on a port or a timeout that cannot be used."""
    if not 0 < args.port < 65536:
        raise ValueError(f"--port expects a port number between 1 and 65535, got {args.port}")
    if not args.wait_timeout > 0:
        raise ValueError(f"--wait-timeout expects a positive number of seconds, got {args.wait_timeout:g}")
    return waiting.WaitPlan(host=args.host, port=args.port, wait_seconds=args.wait_timeout, on_timeout=args.on_timeout)


def run(args: argparse.Namespace) -> int:
    path = args.script
    refused = prelude.check_script("watch", path)
    if refused is not None:
        return refused
    try:
        options = {**WATCH_OPTIONS, **prelude.parse_overrides(args.set)}
        plan = plan_of(args)
    except ValueError as exc:
        return prelude.refuse("watch", str(exc))
    watched = DoctoredRun()
    limits = Limits()

    def report_so_far(end_run: bool) -> None:
        document = build_document([], _SoFar(watched), ScriptOutcome(steps=0, stopped=False), limits)
        _write_report(document)
        if end_run:
            sys.stdout.flush()
            os._exit(EXIT_NOBODY_ATTACHED)

    plan.report = report_so_far
    waiting.configure(plan)
    watched.start(options, origin="watch")
    outcome = script_runner.run_script(path, list(args.args), limits=limits)
    _write_report(build_document([], watched, outcome, limits))
    return 1 if outcome.error else 0


class _SoFar(DoctoredRun):
    """The findings of a run that is still going (nobody attached at its first NaN): the report without ending it."""

    def __init__(self, running: DoctoredRun) -> None:
        super().__init__()
        self.findings = list(running.findings)
        self.shape_map = running.shape_map

    def finish(self, outcome: ScriptOutcome) -> list[Any]:
        return self.findings


def _write_report(document: dict[str, Any]) -> None:
    document.pop("shapeMap", None)  # the findings only: the shape map is the doctor's and the editor's
    try:
        sys.stderr.write(t("[tensorsight] watch report:") + "\n")
        print_report(document, sys.stderr)
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - stderr may be closed
        pass
