"""A bad breakpoint condition, said once in words: the one hook on pydevd's evaluation of breakpoint conditions.

debugpy evaluates a breakpoint's condition with ``eval`` on every hit. When it raises, debugpy does not stop; it says
nothing for a NameError (a typo in a variable name: a breakpoint that silently never fires) and prints a traceback at
every hit for any other error (a syntax error, an exception in a helper). ``watch_conditions`` wraps
``PyDB.handle_breakpoint_condition`` (private API of debugpy 1.8.x's vendored pydevd; a test drives it through a real
debugpy session) so that such a condition is reported once per breakpoint and error, in the words the editor's
validator uses (``core.conditions``), on stderr (the Debug Console) and as a ``condition-error`` event, and then
counts as False, exactly as debugpy already treats it.

The condition is compiled once per condition text, not at every hit. The hook takes over only where debugpy never
suspends on a condition error (its DAP mode); elsewhere, and for anything unexpected, pydevd's own code runs.
Armed by ``agent.conditions.predicates.arm`` under the debugger.
"""

from __future__ import annotations

import builtins
import os
import sys
from types import CodeType, FrameType
from typing import Any

from tensorsight.agent.runtime import events
from tensorsight.agent.runtime.guard import report_once
from tensorsight.core import protocol
from tensorsight.core.conditions import BUILTIN_NAME, ConditionCheck

MAX_COMPILED = 1000  # distinct condition texts kept compiled; beyond this they are compiled at each hit

_compiled: dict[str, CodeType | str] = {}  # condition text -> code, or the syntax error's words


def watch_conditions() -> bool:
    """Wrap pydevd's condition evaluation (idempotent); False when pydevd is not loaded or its API changed."""
    pydevd = sys.modules.get("pydevd")
    debugger_class: Any = getattr(pydevd, "PyDB", None)
    original = getattr(debugger_class, "handle_breakpoint_condition", None)
    if original is None:
        return False
    if getattr(original, "tensorsight_original", None) is not None:
        return True

    def handle_breakpoint_condition(py_db: Any, info: Any, pybreakpoint: Any, new_frame: FrameType) -> Any:
        if not _takes_over(py_db, pybreakpoint):
            return original(py_db, info, pybreakpoint, new_frame)
        return evaluate(pybreakpoint, new_frame)

    handle_breakpoint_condition.tensorsight_original = original  # type: ignore[attr-defined]
    debugger_class.handle_breakpoint_condition = handle_breakpoint_condition
    return True


def _takes_over(py_db: Any, pybreakpoint: Any) -> bool:
    """Only a text condition, on a breakpoint with pydevd's hit-count API, in a debugger that never suspends on a
    condition error (debugpy's DAP mode: ``skip_suspend_on_breakpoint_exception = (BaseException,)``)."""
    try:
        condition = getattr(pybreakpoint, "condition", None)
        if not isinstance(condition, str) or not condition.strip():
            return False
        if not callable(getattr(pybreakpoint, "handle_hit_condition", None)):
            return False
        skipped = getattr(py_db, "skip_suspend_on_breakpoint_exception", ())
        return isinstance(skipped, tuple) and any(
            isinstance(kind, type) and issubclass(Exception, kind) for kind in skipped
        )
    except Exception:  # noqa: BLE001 - anything odd: leave it to pydevd
        return False


def evaluate(pybreakpoint: Any, frame: FrameType) -> Any:
    """The condition's value in ``frame`` (pydevd's order: the hit condition first); False, reported once, when the
    condition cannot be compiled or raises."""
    if pybreakpoint.handle_hit_condition(frame):
        return True
    condition: str = pybreakpoint.condition
    code = _compile(condition)
    if isinstance(code, str):
        _report(condition, frame, "syntax", ConditionCheck(syntax_error=code).message(frame.f_lineno))
        return False
    try:
        return eval(code, frame.f_globals, frame.f_locals)
    except Exception as exc:  # noqa: BLE001 - debugpy treats a raising condition as False; we say why, once
        _report(condition, frame, type(exc).__name__, _explain(exc, frame.f_lineno))
        return False


def _compile(condition: str) -> CodeType | str:
    """The compiled condition (named ``<string>`` like pydevd's ``eval`` of the text), or its syntax error in words."""
    known = _compiled.get(condition)
    if known is not None:
        return known
    try:
        result: CodeType | str = compile(condition.strip(), "<string>", "eval", dont_inherit=True)
    except SyntaxError as exc:
        result = exc.msg or "invalid syntax"
    except (ValueError, OverflowError) as exc:  # a NUL byte, a literal too big
        result = str(exc)
    if len(_compiled) < MAX_COMPILED:
        _compiled[condition] = result
    return result


def _explain(exc: Exception, line: int) -> str:
    """The editor validator's sentence for an undefined name or an unknown ``tensorsight`` helper; else the error."""
    if isinstance(exc, NameError) and not isinstance(exc, UnboundLocalError) and getattr(exc, "name", None):
        return ConditionCheck(undefined=(str(exc.name),)).message(line)
    helpers = getattr(builtins, BUILTIN_NAME, None)
    if isinstance(exc, AttributeError) and helpers is not None and getattr(exc, "obj", None) is helpers:
        return ConditionCheck(unknown_helpers=(f"{BUILTIN_NAME}.{exc.name}",)).message(line)
    return f"it raised {type(exc).__name__}: {exc}; debugpy treats the condition as false and does not stop."


MAX_REPORTED = 10_000  # (breakpoint, error) pairs remembered; beyond this, reports stop rather than repeat

_reported: set[tuple[str, int, str, str]] = set()


def _report(condition: str, frame: FrameType, problem: str, sentence: str) -> None:
    """Once per breakpoint line, condition and kind of error: a Debug Console line and a ``condition-error`` event."""
    key = (frame.f_code.co_filename, frame.f_lineno, condition, problem)
    if key in _reported or len(_reported) >= MAX_REPORTED:
        return
    _reported.add(key)
    location = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
    message = f"breakpoint condition `{condition}` at {location}: {sentence}"
    report_once(f"breakpoint-condition:{key!r}", message)
    events.send(protocol.ConditionErrorEvent(expression=condition, message=message, location=location))
