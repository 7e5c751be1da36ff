"""Whether torch is transforming the program's code right now (``torch.compile``/Dynamo, ``torch.jit.trace``,
``torch.export``): while it is, every hook and mode of ours stands aside.

Torch runs the program's Python code to build a graph: Dynamo traces global module hooks, optimizer hooks and the
torch-function modes on the stack as if they were the program's own code, ``torch.jit.trace`` and ``torch.export``
record every op they run. A hook of ours that read a frame (``sys._getframe``, ``sys.gettrace``) would break
``fullgraph=True``; one that read a tensor (``out.sum()`` for the NaN check) would add nodes to an exported graph or
make two traces of ``torch.jit.trace`` differ. So every global hook and mode of ours asks ``transforming()`` first,
before any frame or tracer access, and does nothing (a mode passes the op straight on) when it says yes.
``runtime.untraced_hooks.untraced_hook`` asks it at the top of its wrapper, so a wrapped hook needs no line of its own.

``transforming`` is written for Dynamo to trace: ``torch.compiler.is_compiling()`` is folded to a constant True
while Dynamo traces, so a traced hook compiles to nothing and the graph, its guards and ``fullgraph`` are as
without TensorSight. Out of a trace it costs the three checks' calls (about 0.4 µs, measured, with torch's three
functions; the last two are then read without a Python frame of theirs).

``arm`` (a feature of ``agent.runtime.install``, armed before the others) binds the checks the installed torch has,
right after the program imports torch. It also stops ``torch.compile(module)`` from warning about our global hooks:
``OptimizedModule.__call__`` warns once per calling line when any global module hook is registered ("this will cause
the hooks to fire an extra time"); ours are meant to see the compiled module's outer call (its output is checked
like any module's), so torch's ``_has_any_global_hook``, which only that warning reads, counts the program's hooks,
not ours.

A mode of ours must also be off the torch-function mode stack when compiled code starts: Dynamo guards on the stack
(its length and the type of each mode), so a mode that is on for one call and off for the next recompiles the
program's function. A pair of global module hooks takes every mode of ours off the stack for the call of a compiled
module (``torch.compile(model)``'s ``OptimizedModule``) and puts them back after it; a compiled function
(``torch.compile(fn)``, ``@torch.compile``) is returned wrapped to do the same around each call. A feature that
takes its mode off by itself tells how to know (``own_mode``), so a mode whose window closed during the call stays
off.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from types import CodeType, ModuleType
from typing import Any

from tensorsight.agent.runtime.guard import never_raise
from tensorsight.agent.runtime.lazy_import import when_imported
from tensorsight.agent.runtime.patches import Patches


def _never() -> bool:
    return False


# The three checks of the installed torch, bound by ``arm`` (a torch without one keeps ``_never`` in its place).
_checks: list[Callable[[], bool]] = [_never, _never, _never]
_patches = Patches("transforming")
_frames: dict[CodeType, bool] = {}  # code of ours that Dynamo must not compile as a frame -> with what it calls
_skip: list[Callable[[CodeType, bool], None] | None] = [None]  # marks a code object, once torch is imported


def transforming() -> bool:
    """True while torch compiles, traces (``torch.jit.trace``) or exports the code that is running: our hooks and
    modes then do nothing. Traceable by Dynamo (see the module docstring)."""
    compiling, tracing, exporting = _checks
    return compiling() or tracing() or exporting()


def skip_frames(code: CodeType, *, calls_too: bool = True) -> None:
    """Dynamo must never compile a frame of ``code`` (and, with ``calls_too``, of anything it calls) as the start of
    a graph. Called for the code torch calls into: hook wrappers, modes' ``__torch_function__``, our wrappers of
    the program's functions (those with ``calls_too=False``: the program's function they call is Dynamo's to take).

    Why: after a graph break Dynamo resumes the rest of the program's frame in Python with its frame callback still
    set, so torch's module call there runs our hooks as frames Dynamo would compile (and guard, and recompile as
    their arguments change: 9 frames compiled instead of 2 in a training loop with one break). Inlined into a graph
    being traced, the same code still folds to nothing (``transforming``): only frame starts are skipped."""
    _frames[code] = calls_too
    mark = _skip[0]
    if mark is not None:
        mark(code, calls_too)


def is_ours(hook: Any) -> bool:
    """True for a hook (a function, a bound method, a wrapper made with ``functools.wraps``) defined by TensorSight."""
    module = getattr(hook, "__module__", None) or ""
    return module == "tensorsight" or module.startswith("tensorsight.")


def arm(origin: str) -> None:
    """Called by ``agent.runtime.install`` (debugger and doctor alike), before any feature that hooks torch."""
    when_imported("torch", _on_torch)


@never_raise()
def _on_torch(torch: ModuleType) -> None:
    """Bind the checks of this torch and quiet the compiled-module warning about our hooks (idempotent)."""
    compiler = getattr(torch, "compiler", None)
    jit = getattr(torch, "jit", None)
    _checks[0] = getattr(compiler, "is_compiling", None) or _never
    _checks[1] = getattr(jit, "is_tracing", None) or _never
    _checks[2] = getattr(compiler, "is_exporting", None) or _never
    # The last two are asked only when the first said no, so never while Dynamo traces (it folds the first to True):
    # they may be what those functions read, without their Python frames (a hook asks at every module call).
    if callable(getattr(torch._C, "_is_tracing", None)):
        _checks[1] = torch._C._is_tracing
    if isinstance(getattr(compiler, "_is_exporting_flag", None), bool):
        _checks[2] = functools.partial(getattr, compiler, "_is_exporting_flag")
    _bind_frame_skipping()
    modules = sys.modules.get("torch.nn.modules.module")
    if modules is not None and callable(getattr(modules, "_has_any_global_hook", None)):
        _patches.replace(modules, "_has_any_global_hook", _programs_hooks_only(modules))
    if callable(getattr(torch, "compile", None)):
        _patches.replace(torch, "compile", _compile_keeping_modes_aside)
    if not _handles:
        from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

        # not through ``untraced_hooks`` (which asks this module): each hook asks ``transforming`` itself and is
        # one type check for every module call but a compiled one's (``never_raise``'s frame is skipped by Dynamo)
        _handles.append(register_module_forward_pre_hook(_before_compiled_module))
        _handles.append(register_module_forward_hook(_after_compiled_module, always_call=True))


# ---- our modes off the stack while compiled code runs --------------------------------------------------------------


class _Aside(threading.local):
    def __init__(self) -> None:
        self.saved: list[list[Any] | None] = []  # per compiled-module call on this thread: the stack it found


_aside = _Aside()
_handles: list[Any] = []
_wanted: dict[int, tuple[Any, Callable[[], bool]]] = {}  # id(mode) -> (mode, does its feature still want it on?)


def own_mode(mode: Any, wanted: Callable[[], bool]) -> None:
    """Tell how to know whether ``mode`` (one of ours) should still be on the stack after a compiled call during
    which it was set aside: its feature may have taken it off meanwhile (a window closed by a step inside)."""
    _wanted[id(mode)] = (mode, wanted)


def modes_aside() -> list[Any] | None:
    """Take every mode of ours off this thread's stack (the program's own stay, in their order); the stack as it was,
    for ``modes_back``, or None when none of ours was on it."""
    torch = sys.modules.get("torch")
    if torch is None or not torch._C._len_torch_function_stack():
        return None
    from torch.overrides import _get_current_function_mode_stack

    stack = list(_get_current_function_mode_stack())
    if not any(is_ours(type(mode)) for mode in stack):
        return None
    _set_stack([mode for mode in stack if not is_ours(type(mode))])
    return stack


def modes_back(saved: list[Any] | None) -> None:
    """Our modes back where ``modes_aside`` found them, unless their feature no longer wants them or already put them
    back; what was pushed meanwhile stays on top."""
    if saved is None:
        return
    from torch.overrides import _get_current_function_mode_stack

    current = list(_get_current_function_mode_stack())

    def present(mode: Any) -> bool:
        return any(mode is other for other in current)

    def keep(mode: Any) -> bool:
        if present(mode):
            return True
        if not is_ours(type(mode)):
            return False  # the program took its own mode off meanwhile
        entry = _wanted.get(id(mode))
        return entry is None or entry[0] is not mode or bool(entry[1]())

    restored = [mode for mode in saved if keep(mode)]
    restored += [mode for mode in current if not any(mode is old for old in saved)]
    if len(restored) != len(current) or any(a is not b for a, b in zip(restored, current, strict=True)):
        _set_stack(restored)


def _is_compiled_module(module: Any) -> bool:
    kind = type(module)
    return kind.__name__ == "OptimizedModule" and kind.__module__ == "torch._dynamo.eval_frame"


@never_raise()
def _before_compiled_module(module: Any, args: Any) -> None:
    """A compiled module's call (``torch.compile(model)``) starts with our modes off this thread's stack, so its
    guards see the same stack whatever we observe now. Our hooks still see that outer call like any module call:
    only what runs inside it is compiled.

    This hook runs after every other global pre-hook (a feature's pre-hook may push a mode: the shape observers
    open a window at the first evaluation call), and its partner before every other global forward hook (the
    others then find the stack as they left it)."""
    if transforming() or not _is_compiled_module(module):
        return
    _keep_order()
    _aside.saved.append(modes_aside())


@never_raise()
def _after_compiled_module(module: Any, args: Any, output: Any) -> None:
    """Our modes back once the compiled module returned (or raised)."""
    if transforming() or not _is_compiled_module(module) or not _aside.saved:
        return
    modes_back(_aside.saved.pop())


def _compile_keeping_modes_aside(original: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.compile`` whose compiled functions (not modules: their hooks do it) run with our modes aside."""

    def compile_aside(*args: Any, **kwargs: Any) -> Any:
        compiled = original(*args, **kwargs)
        if getattr(compiled, "_torchdynamo_orig_callable", None) is None or _is_module(compiled):
            return compiled  # a module, or the decorator ``torch.compile(backend=...)`` returns (it calls us)
        return _running_aside(compiled)

    return compile_aside


def _is_module(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.nn.Module)


def _running_aside(compiled: Callable[..., Any]) -> Callable[..., Any]:
    def run_compiled(*args: Any, **kwargs: Any) -> Any:
        if transforming():
            return compiled(*args, **kwargs)
        saved = modes_aside()
        try:
            return compiled(*args, **kwargs)
        finally:
            modes_back(saved)

    skip_frames(run_compiled.__code__, calls_too=False)
    functools.update_wrapper(run_compiled, compiled)
    # torch unwraps nested compiled functions through these two (``innermost_fn``): through us, to the program's
    run_compiled._torchdynamo_orig_callable = compiled  # type: ignore[attr-defined]
    run_compiled._torchdynamo_wrapper_id = id(run_compiled)  # type: ignore[attr-defined]
    return run_compiled


def _keep_order() -> None:
    modules = sys.modules["torch.nn.modules.module"]
    pre, post = modules._global_forward_pre_hooks, modules._global_forward_hooks
    before, after = _handles[0].id, _handles[1].id
    if before in pre and next(reversed(pre)) != before:
        pre.move_to_end(before)
    if after in post and next(iter(post)) != after:
        post.move_to_end(after, last=False)


def _set_stack(modes: list[Any]) -> None:
    from torch.overrides import _pop_mode, _push_mode

    torch = sys.modules["torch"]
    while torch._C._len_torch_function_stack():
        _pop_mode()
    for mode in modes:
        _push_mode(mode)


def _bind_frame_skipping() -> None:
    try:
        from torch._C._dynamo.eval_frame import (  # type: ignore[import-not-found]
            _FrameAction,
            _FrameExecStrategy,
            set_code_exec_strategy,
        )
    except ImportError:  # a torch without per-code strategies: frames of ours may be compiled (and stand aside)
        return

    def mark(code: CodeType, calls_too: bool) -> None:
        calls = _FrameAction.SKIP if calls_too else _FrameAction.DEFAULT
        set_code_exec_strategy(code, _FrameExecStrategy(_FrameAction.SKIP, calls))

    _skip[0] = mark
    for code, calls_too in list(_frames.items()):
        mark(code, calls_too)
    skip_frames(never_raise()(_never).__code__)  # every hook decorated with ``guard.never_raise`` starts there


def disarm() -> None:
    for handle in _handles:
        handle.remove()
    _handles.clear()
    _patches.restore()
    _checks[:] = [_never, _never, _never]


def _programs_hooks_only(modules: ModuleType) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
    names = (
        "_global_backward_pre_hooks",
        "_global_backward_hooks",
        "_global_forward_pre_hooks",
        "_global_forward_hooks",
    )

    def make(original: Callable[[], Any]) -> Callable[[], Any]:
        def has_any_global_hook() -> Any:
            try:
                for name in names:
                    hooks = getattr(modules, name, None) or {}
                    if any(not is_ours(hook) for hook in list(hooks.values())):
                        return True
                return False
            except Exception:  # noqa: BLE001 - torch's own answer, if its tables changed shape
                return original()

        return has_any_global_hook

    return make
