"""What every headless command does around the user's script, once: its arguments, checking it, options, output.

``python -m tensorsight doctor|shapes|profile|overfit [options] script.py [args...]`` all take a script and its
arguments, refuse a missing script or a folder with exit status 2, send the script's own prints to stderr when they
print one JSON document on stdout, and (doctor) take ``--set KEY=VALUE`` launch options and install the agent the way
a debug session does. Running the script itself is ``agent.runtime.script_runner``.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import sys
from typing import IO, Any

from tensorsight.core import protocol


def add_script_arguments(parser: argparse.ArgumentParser, what: str, *, args_after_dashes: bool = False) -> None:
    """The positional ``script`` and its ``args``: everything after the script goes to it, or (``shapes``) only what
    follows ``--``, so the command's own options may also come after the script."""
    parser.add_argument("script", help=what)
    if args_after_dashes:
        parser.add_argument("args", nargs="*", help="arguments passed to the script (put them after --)")
    else:
        parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")


def add_set_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="override a launch option, e.g. --set measure=false",
    )


def script_problem(path: str) -> str | None:
    """Why ``path`` cannot be run as a script (``is a directory``, ``no such script``), or None."""
    if os.path.isdir(path):
        return f"is a directory, not a script: {path}"
    if not os.path.exists(path):
        return f"no such script: {path}"
    if not os.path.isfile(path):
        return f"not a regular file: {path}"
    return None


def refuse(command: str, message: str) -> int:
    """Say why the command cannot run, on stderr; the status of a misused command (2)."""
    print(f"tensorsight {command}: {message}", file=sys.stderr)
    return 2


def check_script(command: str, path: str) -> int | None:
    """None when ``path`` can be run; else the message is printed and the exit status (2) returned."""
    problem = script_problem(path)
    return None if problem is None else refuse(command, problem)


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """``["a=1", "b=true", "c=text"]`` -> ``{"a": 1, "b": True, "c": "text"}``; raises ValueError on a bad pair or
    on a key that is not a launch option (``core.protocol.LAUNCH_OPTIONS``): a typo would otherwise do nothing."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--set expects KEY=VALUE, got {pair!r}")
        if key not in protocol.OPTIONS_BY_NAME:
            close = difflib.get_close_matches(key, list(protocol.OPTIONS_BY_NAME), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ValueError(f"--set {key}: no such launch option{hint}")
        try:
            out[key] = json.loads(raw)
        except ValueError:
            out[key] = raw
    return out


def install_agent(options: dict[str, Any], origin: str = "doctor") -> None:
    """Arm the agent in this process with ``options`` (the launch options a debug session would pass)."""
    from tensorsight.agent.runtime import install
    from tensorsight.agent.runtime import options as agent_options

    agent_options.set_options(options)
    install.install(origin)


def script_output(quiet_stdout: bool) -> contextlib.AbstractContextManager[Any]:
    """While the script runs: its prints go to stderr when stdout is kept for the command's JSON document."""
    return contextlib.redirect_stdout(sys.stderr) if quiet_stdout else contextlib.nullcontext()


def write_json(document: dict[str, Any], stream: IO[str] | None = None) -> None:
    """The command's one JSON document on stdout (or ``stream``)."""
    out = stream if stream is not None else sys.stdout
    out.write(json.dumps(document, indent=2) + "\n")
