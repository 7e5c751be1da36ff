"""Argument parsing and dispatch for ``python -m tensorsight``; each subcommand lives in its own module."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence

# subcommand -> (module with ``run(args) -> int`` and ``add_arguments(parser)``, one-line help)
SUBCOMMANDS = {
    "doctor": ("tensorsight.cli.doctor", "run a training script with the agent (no debugger) and print findings"),
    "watch": (
        "tensorsight.cli.watch",
        "run a training script unattended; at its first NaN/Inf hold it at that line and wait for a debugger",
    ),
    "demo": ("tensorsight.cli.demo", "run every toolbox check on bundled synthetic data and print what each found"),
    "profile": ("tensorsight.cli.profile", "profile N training steps of a script (cProfile, optional line_profiler)"),
    "overfit": ("tensorsight.cli.overfit", "train a script's model on one small batch and report if loss nears 0"),
    "shapes": ("tensorsight.cli.shapes", "print the shape map (module tree with in/out shapes) of a script's model"),
}


def main(argv: Sequence[str], prog: str = "python -m tensorsight") -> int:
    parser = argparse.ArgumentParser(prog=prog, description="TensorSight command line")
    sub = parser.add_subparsers(dest="command", required=True)
    modules = {}
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)  # a missing command module is a broken build: fail loudly
        modules[name] = module
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(sub_parser)
    args = parser.parse_args(list(argv))
    return int(modules[args.command].run(args))


def console_main() -> int:
    """Entry point of the ``tensorsight`` console script."""
    import sys

    return main(sys.argv[1:], prog="tensorsight")
