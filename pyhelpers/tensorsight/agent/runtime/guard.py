"""Exception firewall for every entry point the debugger or the user's program can reach.

The agent is a guest in someone else's process: an exception escaping from a hook would crash their training run,
and one escaping from a breakpoint condition would silently disable their breakpoint. Everything the outside world
calls goes through ``never_raise``; failures are logged once per call site to stderr (the Debug Console).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_reported: set[str] = set()


def report_once(key: str, message: str) -> None:
    """Print ``message`` to stderr the first time ``key`` is seen; never raises."""
    if key in _reported:
        return
    _reported.add(key)
    say(message)


def say(message: str) -> None:
    """One ``[tensorsight]`` line on stderr (the Debug Console, or the tool's output); never raises."""
    try:
        sys.stderr.write(f"[tensorsight] {message}\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - stderr may be closed in the user's process
        pass


def never_raise(fallback: Any = None) -> Callable[[F], F]:
    """Decorate ``fn`` so any exception becomes ``fallback`` plus one stderr line per function."""

    def decorate(fn: F) -> F:
        name = f"{fn.__module__}.{fn.__qualname__}"

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - the whole point of this wrapper
                report_once(name, f"internal error in {name}: {type(exc).__name__}: {exc}")
                return fallback

        return wrapper  # type: ignore[return-value]

    return decorate
