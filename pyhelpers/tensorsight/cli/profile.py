"""``python -m tensorsight profile``: profile N training steps of a script (cProfile, optional line_profiler).

``python -m tensorsight profile [--json] [--steps N] [--warmup W] [--function NAME ...] [--top K] script.py [args]``

The script runs in this process; after W warm-up optimizer steps (default 1) the steps alternate: one under cProfile
(and line_profiler), one without, until N (default 20) of each have run, and the script is stopped. The report is the
time per step and the phase breakdown of the steps without the profiler (what the training loop's code lens and the
training panel show for a run: the same phase clock, not slowed by the profiler), how much slower the profiled steps
ran (``slowdown``, measured in the same run), the functions by cumulative and own time over the profiled steps (file
and line for jump-to-source), and — for each ``--function`` (a function or ``Class.method`` of the script, or
``module:qualname``) — line-level timings from line_profiler when it is installed. ``--json`` prints one JSON document
(the editor's "Profile Training" table reads it); the script's own output then goes to stderr.
Exit status: 0 on success, 1 when the script failed, 2 when it could not be run.

Both forms are made for reading: besides the raw seconds, each row of the JSON carries ``label`` (a readable function
name: ``torch._C._nn.linear`` for ``<built-in method torch._C._nn.linear>``) and ``location`` (a short path: a library
file from its package, ``torch/nn/modules/linear.py:114``, a workspace file relative to the working directory, the
directory the editor runs the tool in), ``phases`` carries ``breakdown``, the milliseconds per step and share of
each phase, and ``ms_per_step`` / ``profiled_ms_per_step`` are the step's time without and under the profiler.
"""

from __future__ import annotations

import argparse
import os
import re
import sysconfig
from collections.abc import Mapping
from typing import Any

from tensorsight.cli import prelude
from tensorsight.core.phases import PHASES, format_phase_table, phase_shares

# directories under which a file is shown from its package down (``torch/nn/modules/linear.py``)
_PACKAGE_DIRS = ("site-packages", "dist-packages")
BUILT_IN = "(built-in)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument(
        "--steps", type=int, default=20, help="optimizer steps to profile, and as many to time without (default 20)"
    )
    parser.add_argument("--warmup", type=int, default=1, help="steps to run before profiling starts (default 1)")
    parser.add_argument(
        "--function",
        action="append",
        default=[],
        metavar="NAME",
        help="line-level timing of this function (name, Class.method, or module:qualname); repeatable",
    )
    parser.add_argument("--top", type=int, default=40, help="functions to list by cumulative and by own time")
    parser.add_argument("--no-phases", action="store_true", help="do not measure the phase breakdown")
    prelude.add_script_arguments(parser, "the training script to profile")


def run(args: argparse.Namespace) -> int:
    refused = prelude.check_script("profile", args.script)
    if refused is not None:
        return refused
    from tensorsight.agent.measurement.profiling import profile_script

    with prelude.script_output(args.json):
        result = profile_script(
            args.script,
            list(args.args),
            steps=args.steps,
            warmup=args.warmup,
            functions=list(args.function),
            top=max(1, args.top),
            phases=not args.no_phases,
        )
    document = readable_document(result.to_dict(), os.getcwd(), sysconfig.get_paths()["stdlib"])
    if args.json:
        prelude.write_json(document)
    else:
        print_report(document)
    return 1 if result.error else 0


def short_path(file: str | None, workspace: str, stdlib: str) -> str:
    """Where a function lives, as a person reads it: ``torch/nn/modules/linear.py`` for an installed package, the
    path relative to ``workspace`` for the user's files, ``threading.py`` for the standard library, else the path."""
    if not file:
        return BUILT_IN
    full = os.path.abspath(file)
    parts = full.split(os.sep)
    for marker in _PACKAGE_DIRS:
        if marker in parts:
            last = len(parts) - 1 - parts[::-1].index(marker)
            return "/".join(parts[last + 1 :])
    for root in (workspace, stdlib):
        if root and full.startswith(os.path.abspath(root) + os.sep):
            return os.path.relpath(full, root).replace(os.sep, "/")
    return full


_BUILTIN_NAMES = (
    (re.compile(r"^<built-in method (\S+) of (\S+) object at 0x[0-9a-f]+>$"), r"\2.\1"),
    (re.compile(r"^<built-in (?:method|function) (\S+)>$"), r"\1"),
    (re.compile(r"^<method '(\S+)' of '(\S+)' objects>$"), r"\2.\1"),
    (re.compile(r"^<function (\S+) at 0x[0-9a-f]+>$"), r"\1"),
)


def function_label(name: str) -> str:
    """cProfile's name for a built-in, as code calls it: ``<method 'read' of '_io.FileIO' objects>`` ->
    ``_io.FileIO.read``; other names are kept."""
    for pattern, replacement in _BUILTIN_NAMES:
        if pattern.match(name):
            return pattern.sub(replacement, name)
    return name


def phase_breakdown(seconds: Mapping[str, float], steps: int) -> list[dict[str, Any]]:
    """One record per phase, in step order: ``{"phase", "ms_per_step", "percent"}`` (rounded for display)."""
    steps = max(1, int(steps))
    shares = phase_shares(seconds)
    return [
        {
            "phase": name,
            "ms_per_step": round(max(0.0, float(seconds.get(name, 0.0))) * 1000.0 / steps, 3),
            "percent": round(shares[name] * 100.0, 1),
        }
        for name in PHASES
    ]


def readable_document(document: dict[str, Any], workspace: str, stdlib: str) -> dict[str, Any]:
    """The profile document with the reading aids of the module docstring added (a new dict; no key changes)."""
    out = dict(document)
    out["rows"] = [
        {
            **row,
            "label": function_label(row["function"]),
            "location": _location(short_path(row["file"], workspace, stdlib), row["file"], row["line"]),
        }
        for row in document["rows"]
    ]
    out["functions"] = [
        {
            **function,
            "location": _location(short_path(function["file"], workspace, stdlib), True, function["first_line"]),
        }
        for function in document["functions"]
    ]
    phases = document.get("phases")
    if phases and phases.get("steps"):
        out["phases"] = {**phases, "breakdown": phase_breakdown(phases["seconds"], phases["steps"])}
    out["ms_per_step"], out["profiled_ms_per_step"] = step_times(document)
    return out


def step_times(document: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """Milliseconds per step without the profiler (the phase clock's whole step when it ran, as the code lens counts
    it; else the wall time of the steps timed without the profiler) and under it (wall time of the profiled steps)."""
    phases = document.get("phases") or {}
    if phases.get("steps") and phases.get("profiler_off"):
        plain: float | None = sum(max(0.0, float(v)) for v in phases["seconds"].values()) * 1000.0 / phases["steps"]
    elif document.get("steps_timed"):
        plain = float(document["timed_wall_s"]) * 1000.0 / document["steps_timed"]
    else:
        plain = None
    steps = document.get("steps_profiled") or 0
    profiled = float(document["wall_s"]) * 1000.0 / steps if steps else None
    return (None if plain is None else round(plain, 3)), (None if profiled is None else round(profiled, 3))


def _location(path: str, file: object, line: int) -> str:
    return f"{path}:{line}" if file else path


def _ms(seconds: float) -> str:
    return f"{seconds * 1000.0:,.1f}"


def under_profiler(slowdown: float | None, profiled_ms: float) -> str:
    """The sentence that goes with the functions table: their times are the profiled steps', slowed by the profiler."""
    if slowdown is None:
        return f"under cProfile: {profiled_ms:.1f} ms per step"
    return f"under cProfile: {profiled_ms:.1f} ms per step, {slowdown:.1f}× slower than without (median step)"


def print_report(document: dict[str, Any]) -> None:
    """The terminal form of a profile document (as ``readable_document`` returns it)."""
    steps = document["steps_profiled"]
    plain, profiled = step_times(document)
    per_step = f": {plain:.1f} ms per step" if plain is not None else ""
    print(
        f"TensorSight profile of {os.path.relpath(document['script'])}: {steps} step(s) under cProfile and "
        f"{document.get('steps_timed', 0)} without, after {document['warmup']} warm-up step(s){per_step}"
    )
    phases = document.get("phases")
    if phases and phases.get("steps"):
        kind = "run without the profiler" if phases.get("profiler_off") else "measured under cProfile"
        print(f"\nTime per phase (mean over {phases['steps']} steps {kind})")
        print(format_phase_table(phases["seconds"], phases["steps"]))
    rows = document["rows"]
    if rows:
        print(f"\nTop functions by total time over the {steps} profiled step(s) (* = your code)")
        if profiled is not None:
            print(under_profiler(document.get("slowdown"), profiled))
        header = ("Total ms", "Own ms", "Calls", "Function", "Location")
        body = [
            (
                _ms(row["cumulative_s"]),
                _ms(row["own_s"]),
                f"{row['calls']:,}",
                ("*" if row["user"] else " ") + row.get("label", row["function"]),
                row.get("location", row["file"] or BUILT_IN),
            )
            for row in rows
        ]
        widths = [max(len(cells[i]) for cells in (header, *body)) for i in range(len(header))]
        for cells in (header, *body):
            numbers = "  ".join(cells[i].rjust(widths[i]) for i in range(3))
            print(f"{numbers}  {cells[3].ljust(widths[3])}  {cells[4]}".rstrip())
    for function in document["functions"]:
        where = function.get("location", f"{function['file']}:{function['first_line']}")
        print(f"\nLine timings of {function['function']} ({where}), {_ms(function['total_s'])} ms in all")
        print(f"{'line':>6} {'hits':>8} {'time ms':>10} {'per hit µs':>11} {'%':>6}  source")
        for line in function["lines"]:
            print(
                f"{line['line']:>6} {line['hits']:>8} {line['time_s'] * 1000.0:>10.3f} "
                f"{line['per_hit_s'] * 1e6:>11.1f} {line['percent']:>6.1f}  {line['source']}"
            )
    for note in document["notes"]:
        print(f"note: {note}")
    if document["error"]:
        print(f"the script stopped with: {document['error']}")
