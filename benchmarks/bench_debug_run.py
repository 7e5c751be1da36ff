"""A plain F5 on "Debug Training" against plain ``python``, on ``examples/correct_training.py``: target <= 1.3x.

What a user waits for, measured from outside the program (process start to exit), as they would with a stopwatch.
A debug run ends when the adapter's ``exited`` event arrives (its time of arrival, not when the driver's loop, which
also waits for workers' attach events, looks):

- ``plain``: ``python examples/correct_training.py``;
- ``debug``: the same script under a real debugpy adapter session launched the way the extension launches a plain
  F5 (debugpy's adapter and launcher started through ``tensorsight.debugpy_start``, as
  ``extension/src/debug/provider.ts`` and ``launchConfig.ts`` start them; ``justMyCode`` false, the internal console,
  ``TENSORSIGHT_OPTIONS`` holding ``breakOnNonFinite`` from the setting, every other option at the contract's
  default, so measurement is on), with the agent reporting to the hub of the real language server
  (``python -m tensorsight.server`` over stdio, trusted, ``tensorsight/startSession`` as the extension asks it).

``--variant NAME=JSON`` adds a debug run with those options merged in (``--variant 'no-measure={"measure":
false}'``), to see which feature costs what; ``NAME=null`` runs stock debugpy without the agent (``python -m
debugpy.adapter``: what the debugger itself costs); ``--no-hub`` runs the debug sessions without the server. Each
mode runs ``--repeat`` times (default 2), alternately; the best and the median of each are printed, with the load
average before and after: on a shared machine only the ratios of one run mean something, and the best of its rounds
is the least disturbed one.

Each interpreter is measured on its own (plain and debug runs under the same Python): the one running this script
(the dev ``.venv``'s 3.11, where pydevd traces with ``sys.settrace``) and, when ``scripts/setup.sh torch-pythons``
made it, ``.venvs/torch3.12`` (pydevd on ``sys.monitoring``, PEP 669), side by side; ``--python PATH`` (repeatable)
names others instead. The language server stays on this script's interpreter, as the extension runs it on its own.

Python writes byte code as a user's machine does (a ``PYTHONDONTWRITEBYTECODE`` of the calling shell is dropped:
with it, every debug run would compile the agent's modules again, which no installed extension does after its first
run), and one untimed debug run comes first so that the byte code exists.

    .venv/bin/python benchmarks/bench_debug_run.py
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYHELPERS = os.path.join(REPO, "pyhelpers")
sys.path.insert(0, PYHELPERS)
sys.path.insert(0, os.path.join(REPO, "tests"))

from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

from support import dap_multi  # noqa: E402
from support.dap import DapError  # noqa: E402
from support.dap_multi import MultiProcessSession, WorkerSession  # noqa: E402

SCRIPT = os.path.join(REPO, "examples", "correct_training.py")
TARGET = 1.3
# What launchOptions() puts in TENSORSIGHT_OPTIONS for a configuration without "options": the breakOnNonFinite
# setting (its manifest default, true); everything else is left to the contract's defaults.
PLAIN_F5_OPTIONS: dict[str, Any] = {"breakOnNonFinite": True}
RUN_TIMEOUT = 600.0
LATE_ATTACHES = [0]  # workers that had ended when their attach was configured (printed at the end)
VSCODE_EXCEPTION_FILTERS = ["uncaught"]  # the filter debugpy's adapter declares on by default, as VS Code sends it


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("TENSORSIGHT_")}


os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # the debug runs' processes inherit this process's environment


def default_pythons() -> list[str]:
    """This script's interpreter, then the torch venv of Python 3.12 where the set-up made it."""
    pythons = [sys.executable]
    other = os.path.join(REPO, ".venvs", "torch3.12", "bin", "python")
    if os.access(other, os.X_OK):
        pythons.append(other)
    return pythons


def version_of(python: str) -> str:
    code = "import sys, torch; print('%d.%d' % sys.version_info[:2], torch.__version__)"
    return subprocess.run([python, "-c", code], check=True, capture_output=True, text=True).stdout.strip()


def run_plain(python: str) -> float:
    started = time.perf_counter()
    subprocess.run([python, SCRIPT], cwd=os.path.dirname(SCRIPT), env=clean_env(), check=True, capture_output=True)
    return time.perf_counter() - started


def run_debug(python: str, options: dict[str, Any] | None, hub: dict[str, str] | None, session_id: str) -> float:
    """One debugged run, every DataLoader worker attached as VS Code attaches it (a child session per process)."""
    env = {"TENSORSIGHT_SESSION": session_id}
    if hub is not None:
        env["TENSORSIGHT_HUB"] = hub["address"]
        env["TENSORSIGHT_TOKEN"] = hub["token"]
    # options None: debugpy alone, without the agent (what the debugger itself costs)
    dap_multi.PYHELPERS = PYHELPERS if options is not None else ""
    started = time.perf_counter()
    deadline = time.monotonic() + RUN_TIMEOUT
    with MultiProcessSession.launch(
        program=SCRIPT,
        cwd=os.path.dirname(SCRIPT),
        options=options,
        env=env,
        exception_filters=VSCODE_EXCEPTION_FILTERS,
        timeout=RUN_TIMEOUT,
        as_the_extension=options is not None,
        python=python,
    ) as job:
        while True:
            try:
                job.root.wait_for_event("exited", timeout=0.05, consume=False)
                break
            except DapError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"the debugged run did not end within {RUN_TIMEOUT}s")
            try:
                attach = job.root.wait_for_event("debugpyAttach", timeout=0.2)
            except DapError:
                continue
            try:
                worker = WorkerSession.attach(
                    dict(attach["body"]), exception_filters=VSCODE_EXCEPTION_FILTERS, timeout=60
                )
            except DapError:  # a worker that started at once (nothing to stop at) ended before its attach finished
                LATE_ATTACHES[0] += 1
                continue
            job.workers.append(worker)
        # when the editor learnt that the program ended, not when this loop looked (it may have been waiting up to
        # 0.2 s for a worker's attach)
        elapsed = job.root.first_seen["exited"] - started
        code = int(job.root.wait_for_event("exited", timeout=1)["body"]["exitCode"])
        if code != 0:
            raise SystemExit(f"the debugged run exited with {code}:\n{job.root.stdout()[-2000:]}")
    return elapsed


class Hub:
    """The real language server, trusted, as the extension starts it; counts the run events it forwards."""

    def __init__(self) -> None:
        self.client = LanguageClient("bench-debug-run", "1")
        self.events = 0

        @self.client.feature("tensorsight/runEvent")
        def run_event(params: Any) -> None:
            events = getattr(params, "events", None)
            self.events += len(events) if events is not None else 1

        for method in ("tensorsight/status", "tensorsight/gpu", "window/logMessage", "textDocument/publishDiagnostics"):
            self.client.feature(method)(lambda params: None)  # what VS Code shows; here only read, not to warn

    async def start(self) -> None:
        env = clean_env()
        env["PYTHONPATH"] = os.path.join(REPO, "pyhelpers")
        await self.client.start_io(sys.executable, "-m", "tensorsight.server", env=env)
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                process_id=os.getpid(),
                initialization_options={"trusted": True},
            )
        )
        self.client.initialized(types.InitializedParams())

    async def session(self, session_id: str) -> dict[str, str]:
        answer = await self.client.protocol.send_request_async("tensorsight/startSession", {"sessionId": session_id})
        return {"address": answer.address, "token": answer.token}

    async def end(self, session_id: str) -> None:
        await self.client.protocol.send_request_async("tensorsight/endSession", {"sessionId": session_id})

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--no-hub", action="store_true", help="debug runs without the language server")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=JSON")
    parser.add_argument(
        "--python",
        action="append",
        default=[],
        metavar="PATH",
        help="an interpreter with torch and debugpy (repeatable)",
    )
    args = parser.parse_args()
    variants: dict[str, dict[str, Any] | None] = {"debug": dict(PLAIN_F5_OPTIONS)}
    for item in args.variant:
        name, _, raw = item.partition("=")
        value = json.loads(raw)
        variants[name] = None if value is None else {**PLAIN_F5_OPTIONS, **value}

    load_before = os.getloadavg()
    hub = None if args.no_hub else Hub()
    if hub is not None:
        await hub.start()
    # absolute: the launcher starts the program from its own folder
    pythons = [os.path.abspath(p) for p in args.python] or default_pythons()
    # times[python][mode]
    times: dict[str, dict[str, list[float]]] = {p: {"plain": [], **{name: [] for name in variants}} for p in pythons}

    async def debug_round(python: str, options: dict[str, Any] | None) -> float:
        session_id = str(uuid.uuid4())
        address = await hub.session(session_id) if hub is not None else None
        elapsed = await asyncio.to_thread(run_debug, python, options, address, session_id)
        if hub is not None:
            await hub.end(session_id)
        return elapsed

    try:
        for python in pythons:
            await debug_round(python, dict(PLAIN_F5_OPTIONS))  # writes the byte code
        for _ in range(args.repeat):
            for python in pythons:
                times[python]["plain"].append(await asyncio.to_thread(run_plain, python))
                for name, options in variants.items():
                    times[python][name].append(await debug_round(python, options))
    finally:
        if hub is not None:
            await hub.stop()

    load_after = os.getloadavg()
    print(f"examples/correct_training.py, {args.repeat} rounds (process start to exit): best, median")
    print(f"  load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    if hub is not None:
        print(f"  run events forwarded to the editor: {hub.events}")
    print(f"  workers that ended before their attach finished: {LATE_ATTACHES[0]}")
    summary = []
    for python in pythons:
        version = version_of(python)
        print(f"Python {version} ({os.path.relpath(python, REPO)})")
        mine = times[python]
        plain, plain_best = statistics.median(mine["plain"]), min(mine["plain"])
        print(f"  plain python            {plain_best:7.2f} s {plain:7.2f} s")
        for name, options in variants.items():
            best, median = min(mine[name]), statistics.median(mine[name])
            print(
                f"  {name:<22}  {best:7.2f} s {median:7.2f} s  {best / plain_best:5.2f}x {median / plain:5.2f}x"
                f"  options {json.dumps(options)}"
            )
        # each round runs plain python right before the debug run: their ratio sees the same load
        rounds = [debug / plain_round for debug, plain_round in zip(mine["debug"], mine["plain"], strict=True)]
        print(f"  per round, debug / plain: {', '.join(f'{r:.2f}x' for r in rounds)}")
        best_ratio = min(mine["debug"]) / plain_best
        ratio = statistics.median(mine["debug"]) / plain
        summary.append(
            f"Python {version.split()[0]}: plain F5 Debug Training / plain python = {best_ratio:.2f}x best,"
            f" {ratio:.2f}x median, {min(rounds):.2f}x best round (target <= {TARGET}x):"
            f" {best_ratio / TARGET:.2f} of it"
        )
    print("\n".join(summary))


if __name__ == "__main__":
    asyncio.run(main())
