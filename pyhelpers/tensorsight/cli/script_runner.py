"""Runs a user's training script in this process as ``__main__`` and stops it after a number of optimizer steps.

Used by the on-request tools that need only the first steps of a run: ``python -m tensorsight profile`` (profile N
steps) and ``python -m tensorsight overfit`` (capture the model, loss and batch at the first step). The script runs
like ``python script.py args`` (own ``sys.argv``, its folder first on ``sys.path``), compiled here so a tool can
transform its code first (line-level profiling swaps in instrumented function bodies). Stopping is a
``StopScript`` raised from torch's optimizer step hook: a ``BaseException``, so a script's ``except Exception``
does not swallow it.
"""

from __future__ import annotations

import builtins
import os
import sys
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tensorsight.agent.runtime import steps
from tensorsight.agent.runtime.lazy_import import when_imported


class StopScript(BaseException):
    """Ends the user's script once the tool has what it needs."""


@dataclass
class ScriptOutcome:
    """How the run ended: ``stopped`` when the tool stopped it, ``error`` when the script itself failed."""

    steps: int
    stopped: bool
    error: str = ""
    exception: BaseException | None = None


def compile_script(path: str) -> types.CodeType:
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    return compile(source, os.path.abspath(path), "exec", dont_inherit=True)


def after_torch(callback: Callable[[Any], None]) -> None:
    """Arm the shared step counter, then call ``callback(torch)`` once the script imports torch."""
    steps.arm("tool")
    when_imported("torch", callback)


def run_script(path: str, args: list[str], code: types.CodeType | None = None) -> ScriptOutcome:
    """Execute the script until it ends or a hook raises ``StopScript``; never raises for the script's errors."""
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": os.path.abspath(path), "__builtins__": builtins, "__cached__": None})
    saved_main, saved_argv = sys.modules.get("__main__"), sys.argv[:]
    folder = os.path.dirname(os.path.abspath(path))
    sys.modules["__main__"] = main
    sys.argv = [path, *args]
    sys.path.insert(0, folder)
    outcome = ScriptOutcome(steps=0, stopped=False)
    try:
        exec(code if code is not None else compile_script(path), main.__dict__)
    except StopScript:
        outcome.stopped = True
    except SystemExit as exc:
        if exc.code not in (None, 0):
            outcome.error = f"script exited with status {exc.code}"
    except BaseException as exc:  # noqa: BLE001 - the user's script may raise anything
        outcome.error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        outcome.exception = exc
        traceback.print_exc(file=sys.stderr)
    finally:
        sys.argv = saved_argv
        if sys.path and sys.path[0] == folder:
            del sys.path[0]
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    outcome.steps = steps.current_step()
    return outcome
