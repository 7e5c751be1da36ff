"""Relays: wrappers around library functions that warnings look through, so a wrapped function's warnings keep
pointing at the user's line.

Used by ``tensorsight.agent.measurement.evaluation`` for the ``torch.nn.functional`` losses. Those functions warn on
their caller's behalf (``warnings.warn(..., stacklevel=2)``: "Using a target size that is different to the input
size", kl_div's "reduction: 'mean'"); a plain wrapper would become that caller, and the warning would name our file
instead of the user's line (and show once per process instead of once per line).

The file name is what makes this work, and must keep both words: when CPython counts a warning's ``stacklevel`` it
skips every frame whose file name contains ``importlib`` and ``_bootstrap`` (that is how importlib hides its own
frames from the warnings it passes on). The relay's frame is defined here, so it is skipped in the same way and
``stacklevel=2`` lands on the frame that called the relay, exactly as if nothing were wrapped. (A mode, which must
call the op from its own frame, gets the same effect from ``runtime.op_calls.call_as_caller``; a relay needs no
compiled call site per line, and stays plain Python that ``torch.compile`` can trace through.)

Our own walks for the user's frame (the shape observers', the sentinel's) stop at a frame of ours, taking it for our
own work; the relay's code carries ``op_calls.OP_CALL_NAME`` so that they look through it, as through a mode's call
of the op. Tracebacks show this file with its source; the debugger hides it with the rest of the package.
"""

from __future__ import annotations

import dis
import functools
import types
from collections.abc import Callable
from typing import Any

from tensorsight.agent.runtime.op_calls import OP_CALL_NAME


class Nesting:
    """Shared by a family of relays: only the outermost call of the family is observed (``nn.CrossEntropyLoss``
    calling ``F.cross_entropy``, or a ``TorchFunctionMode`` passing the same call on, is one call)."""

    __slots__ = ("depth",)

    def __init__(self) -> None:
        self.depth = 0


def observing_relay(
    original: Callable[..., Any],
    after: Callable[[Any], None] | None,
    nesting: Nesting,
    looks_away: Callable[[], bool],
    with_arguments: Callable[[tuple[Any, ...], dict[str, Any], Any], None] | None = None,
) -> Callable[..., Any]:
    """``original`` unchanged (same arguments, result and exceptions), then, for an outermost call, ``after(result)``
    and ``with_arguments(args, kwargs, result)``, each when given.

    ``looks_away()`` is asked first; when it is true (another thread, a compiled region) the relay only calls
    ``original``, so ``nesting`` is only ever changed by the thread being observed. ``after`` must never raise.
    """

    def relay(*args: Any, **kwargs: Any) -> Any:
        if nesting.depth or looks_away():
            return original(*args, **kwargs)
        nesting.depth += 1
        try:
            result = original(*args, **kwargs)
        finally:
            nesting.depth -= 1
        if after is not None:
            after(result)
        if with_arguments is not None:
            with_arguments(args, kwargs, result)
        return result

    # The relay reads no global, so it can live in the original's module: TorchScript, asked to compile it, compiles
    # the original's source (``__wrapped__``) and resolves its names there (``torch.jit.script`` of a model calling
    # ``F.cross_entropy``, or of ``nn.CrossEntropyLoss``, works as before).
    scope = getattr(original, "__globals__", None)
    code = relay.__code__.replace(co_name=OP_CALL_NAME)  # looked through by our frame walks
    if isinstance(scope, dict) and not _reads_globals(code):
        relay = types.FunctionType(code, scope, relay.__name__, None, relay.__closure__)
    else:
        relay.__code__ = code
    return functools.wraps(original)(relay)


def _reads_globals(code: types.CodeType) -> bool:
    return any(instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME") for instruction in dis.get_instructions(code))
