"""Running the program's torch op from inside one of our ``TorchFunctionMode``s without changing what it sees.

Used by the modes of the NaN sentinel (``agent.sentinel.outside``) and the shape observers
(``agent.shapes.observers``), only while they observe (a mode is never on the stack otherwise).

A mode's ``__torch_function__`` is a Python frame between the user's line and the op. Python attributes a warning
to the innermost frame (C++ ``TORCH_WARN`` uses stacklevel 1; torch's Python functions stacklevel 2 from their own
frame), so a warning raised by the op would name our file, and the program's filters and its "once per location"
deduplication would apply to our location instead of the user's. ``call_as_caller`` runs the op from a one-line
function compiled with the caller's file name, line number and globals: warnings get exactly the location,
module and registry they would get without us. Those functions are hidden from the debugger (``pause.hide_code``:
no breakpoint hit, no step into, not in the Call Stack) and from our own frame walks (``is_op_call``).

Our own reads of the program's tensors (``.shape``, a reduction, ``.grad_fn``) must not run a tensor subclass's
``__torch_function__`` either: the program would count extra calls. ``shielded`` turns torch-function dispatch off
around them when a subclass is there.
"""

from __future__ import annotations

import contextlib
import os
import sys
import types
from collections.abc import Callable
from typing import Any

from tensorsight.agent.runtime.untraced_hooks import is_hook_wrapper, traced_call

OP_CALL_NAME = "<tensorsight op call>"
MAX_CALL_SITES = 20_000

_SOURCE = "def _call(func, args, kwargs): return func(*args, **kwargs)\n"
_template: types.CodeType | None = None
_sites: dict[tuple[str, int, int], Callable[..., Any]] = {}
_OVERRIDES = os.sep + os.path.join("torch", "overrides.py")


def _template_code() -> types.CodeType:
    global _template
    if _template is None:
        module = compile(_SOURCE, "<tensorsight>", "exec")
        code = next(c for c in module.co_consts if isinstance(c, types.CodeType))
        _template = code.replace(co_name=OP_CALL_NAME)
    return _template


def is_op_call(code: types.CodeType) -> bool:
    """True for the frames ``call_as_caller`` adds: walks for the user's frame look through them."""
    return code.co_name == OP_CALL_NAME


def caller_frame(func: Any, start: types.FrameType) -> types.FrameType:
    """The frame the program called ``func`` from: torch's ``handle_torch_function`` (``torch/overrides.py``), the
    frame ``untraced_hooks`` puts before a mode's ``__torch_function__`` and, for a torch function written in Python
    (``F.relu``), the first run of that function are looked through."""
    frame = start
    own = getattr(func, "__code__", None)
    while frame.f_back is not None:
        code = frame.f_code
        if code.co_filename.endswith(_OVERRIDES) or (own is not None and code is own) or is_hook_wrapper(code):
            frame = frame.f_back
            continue
        break
    return frame


def call_as_caller(func: Any, args: Any, kwargs: Any, frame: types.FrameType) -> Any:
    """``func(*args, **kwargs)``, run as if from ``frame``'s current line (see the module docstring), traced by the
    debugger as the program's own call (``untraced_hooks.traced_call``)."""
    return traced_call(_site(frame), func, args, kwargs)


def _site(frame: types.FrameType) -> Callable[..., Any]:
    filename = frame.f_code.co_filename
    line = frame.f_lineno or frame.f_code.co_firstlineno
    scope = frame.f_globals
    key = (filename, line, id(scope))
    site = _sites.get(key)
    if site is not None and site.__globals__ is scope:
        return site
    code = _template_code().replace(co_filename=filename, co_firstlineno=line)
    site = types.FunctionType(code, scope, OP_CALL_NAME)
    if len(_sites) < MAX_CALL_SITES:
        _sites[key] = site
    _hide(code, filename)
    return site


def _hide(code: types.CodeType, filename: str) -> None:
    # looked up, not imported: plumbing does not import the debugger glue, which is loaded whenever a debugger is
    pause = sys.modules.get("tensorsight.agent.debugger.pause")
    if pause is not None:
        pause.hide_code(code, filename)


def has_subclass(tensors: list[Any]) -> bool:
    """True when one of the tensors is of a subclass (other than ``nn.Parameter``)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    plain, parameter = torch.Tensor, torch.nn.Parameter
    return any(type(t) is not plain and type(t) is not parameter for t in tensors)


def shielded(tensors: list[Any]) -> contextlib.AbstractContextManager[Any]:
    """A context for our reads of ``tensors``: torch-function dispatch off (no subclass ``__torch_function__``, no
    mode) when one is of a subclass, else nothing (entering the guard costs about a microsecond, and this runs for
    every op a mode observes)."""
    if tensors and has_subclass(tensors):
        return sys.modules["torch"]._C.DisableTorchFunction()  # type: ignore[no-any-return]
    return _NOTHING


_NOTHING = contextlib.nullcontext()
