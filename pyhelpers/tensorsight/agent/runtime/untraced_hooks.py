"""Runs the agent's hooks with the debugger's tracer off on the calling thread, and the program's code inside them
with it back on.

Used where torch or the program calls into the agent on the program's threads: the module and optimizer hooks of
the NaN sentinel, the phase clock and the shape observers, the step listeners (``runtime.steps``), the modes'
``__torch_function__`` and the autograd node hooks. ``agent.debugger.untraced.arm`` arms it under pydevd on
Python < 3.12, where pydevd traces through ``sys.settrace``: there every Python call the agent makes pays the
tracer's "call" event (about 0.75 µs in pydevd, against 0.07 µs untraced), and a measured step of
``examples/correct_training.py`` (``benchmarks/bench_debug_run.py``) makes some 400 of them: with the hooks traced,
the tracer cost that step 2.4 ms of CPU of 6 ms; untraced, under 0.1 ms.

``untraced_hook(hook)`` wraps a hook: when the thread is traced, the hook body runs with the tracer off (the
interpreter's own ``sys.settrace``, which pydevd keeps as ``pydevd_tracing._original_settrace``; pydevd replaces
``sys.settrace`` itself by a warning wrapper) and the same tracer is put back after it, unless something set another
one meanwhile. The agent's files are already hidden from pydevd (``debugger.pause.hide_agent_files``): nobody can
stop in them, so the only change is what the hook's own calls into torch or the standard library would hit: a
breakpoint in torch's files no longer stops on TensorSight's reads, only on the program's calls.

``traced_call(function, ...)`` runs the program's own code from inside such a hook with the hook's tracer back on:
the op a ``TorchFunctionMode`` passes on (``runtime.op_calls.call_as_caller``: a tensor subclass's
``__torch_function__``, a torch function written in Python) and the sentinel's replay of a forward. A breakpoint, a
step or a pause there behaves as without TensorSight. What is not the program's call but runs on its thread during a
hook (a ``__del__`` collected there, a property of a module subclass the hook reads) runs untraced: its
breakpoints do not stop there.

The tracer put back is the thread's tracer object installed with the interpreter's own trampoline: pydevd installs
it through a native helper that skips the trampoline's copy of a frame's locals into a dict and back, so after the
first hook the thread is traced as under ``pdb`` (about 0.07 µs more per traced call, measured).

Without a debugger, with a tracer other than pydevd's or on Python 3.12+ (``sys.monitoring``), hooks run as they are.
While torch compiles, traces or exports, they do not run at all (``runtime.transforming``).
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from tensorsight.agent.runtime.transforming import skip_frames, transforming

F = TypeVar("F", bound=Callable[..., Any])

_switch: list[Callable[[Any], None] | None] = [None]  # the interpreter's own settrace, once armed
_saved = threading.local()  # .tracer: the tracer an enclosing untraced hook took off this thread
_gettrace = sys.gettrace


def arm(settrace: Callable[[Any], None]) -> None:
    """Called by ``agent.debugger.untraced`` under pydevd: hooks run untraced from now on."""
    _switch[0] = settrace


def disarm() -> None:
    _switch[0] = None


def armed() -> bool:
    return _switch[0] is not None


def untraced_hook(hook: F, *, aside: Callable[..., Any] | None = None) -> F:
    """``hook``, run with this thread's debugger tracer off when armed and traced (see the module docstring).

    While torch compiles, traces or exports (``runtime.transforming``) the hook does not run: the wrapper returns
    ``aside(*args, **kwargs)`` (None without ``aside``, what a hook that changes nothing returns) before touching the
    tracer, so Dynamo traces nothing of ours."""

    @functools.wraps(hook)
    def run_untraced(*args: Any, **kwargs: Any) -> Any:
        if transforming():
            return None if aside is None else aside(*args, **kwargs)
        switch = _switch[0]
        tracer = _gettrace()
        if switch is None or tracer is None:
            return hook(*args, **kwargs)
        outer = getattr(_saved, "tracer", None)
        _saved.tracer = tracer
        switch(None)
        try:
            return hook(*args, **kwargs)
        finally:
            _saved.tracer = outer
            if _gettrace() is None:
                switch(tracer)

    return run_untraced  # type: ignore[return-value]


def _pass_op_on(_mode: Any, func: Any, _types: Any, args: Any = (), kwargs: Any = None) -> Any:
    return func(*args, **(kwargs or {}))


def untraced_torch_function(method: F) -> F:
    """``untraced_hook`` for a mode's ``__torch_function__``: while torch transforms code, the op passes straight
    on (the mode does nothing, and a trace records the program's op alone)."""
    return untraced_hook(method, aside=_pass_op_on)


_WRAPPER_CODE = untraced_hook(lambda: None).__code__
skip_frames(_WRAPPER_CODE)  # torch calls our hooks through it: never a frame for Dynamo to compile


def is_hook_wrapper(code: Any) -> bool:
    """True for the frame ``untraced_hook`` adds between torch and a hook: walks for the program's frame look through
    it (as through torch's dispatch)."""
    return code is _WRAPPER_CODE


def traced_call(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``: the program's code, traced again when an untraced hook took the tracer off."""
    tracer = getattr(_saved, "tracer", None)
    if tracer is None or _gettrace() is not None:
        return function(*args, **kwargs)
    switch = _switch[0]
    if switch is None:
        return function(*args, **kwargs)
    _saved.tracer = None
    switch(tracer)
    try:
        return function(*args, **kwargs)
    finally:
        _saved.tracer = tracer
        if _gettrace() is tracer:
            switch(None)
