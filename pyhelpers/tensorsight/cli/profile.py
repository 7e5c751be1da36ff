"""``python -m tensorsight profile``: profile N training steps of a script (cProfile, optional line_profiler).

``python -m tensorsight profile [--json] [--steps N] [--warmup W] [--function NAME ...] [--top K] script.py [args]``

The script runs in this process; after W warm-up optimizer steps (default 1) cProfile records the next N (default
20) and the script is stopped. The report is the phase breakdown of those steps, the functions by cumulative and own
time (file and line for jump-to-source), and — for each ``--function`` (a function or ``Class.method`` of the script,
or ``module:qualname``) — line-level timings from line_profiler when it is installed. ``--json`` prints one JSON
document (the editor's "Profile Training" table reads it); the script's own output then goes to stderr.
Exit status: 0 on success, 1 when the script failed, 2 when it could not be run.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from tensorsight.cli import prelude
from tensorsight.core.phases import format_phase_table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--steps", type=int, default=20, help="optimizer steps to profile (default 20)")
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
    document = result.to_dict()
    if args.json:
        prelude.write_json(document)
    else:
        print_report(document)
    return 1 if result.error else 0


def _where(file: str | None, line: int) -> str:
    return f"{os.path.relpath(file)}:{line}" if file else "(built-in)"


def print_report(document: dict[str, Any]) -> None:
    print(
        f"TensorSight profile of {os.path.relpath(document['script'])}: {document['steps_profiled']} step(s) after "
        f"{document['warmup']} warm-up step(s), {document['wall_s']:.3f} s"
    )
    phases = document.get("phases")
    if phases and phases.get("steps"):
        print("\nphase breakdown (measured under cProfile)")
        print(format_phase_table(phases["seconds"], phases["steps"]))
    if document["rows"]:
        print(f"\n{'cumulative s':>12} {'own s':>9} {'calls':>8}  function")
        for row in document["rows"]:
            mark = "*" if row["user"] else " "
            print(
                f"{row['cumulative_s']:>12.4f} {row['own_s']:>9.4f} {row['calls']:>8} {mark}{row['function']}  "
                f"{_where(row['file'], row['line'])}"
            )
        print("(* = your code)")
    for function in document["functions"]:
        print(
            f"\nline timings of {function['function']} ({_where(function['file'], function['first_line'])}), "
            f"{function['total_s']:.4f} s"
        )
        print(f"{'line':>6} {'hits':>8} {'time s':>10} {'per hit µs':>11} {'%':>6}  source")
        for line in function["lines"]:
            print(
                f"{line['line']:>6} {line['hits']:>8} {line['time_s']:>10.5f} {line['per_hit_s'] * 1e6:>11.1f} "
                f"{line['percent']:>6.1f}  {line['source']}"
            )
    for note in document["notes"]:
        print(f"note: {note}")
    if document["error"]:
        print(f"the script stopped with: {document['error']}")
