"""The replay of a function that has returned: when the graph search (``graph_search``) names an op of a function the
training loop called earlier in the step (a loss written by hand in ``def cross_entropy(...)``), that function runs
again, op by op, on private copies of the arguments it was called with, so the debugger stops in it, on the op's line,
as it would have in an observed step.

Only a call the sentinel can repeat without the program noticing is replayed:

- the caller is still running (the training loop that called the function and then ``backward()``), and the call's
  line is known from an observed step (``sites.Site.caller``);
- the call is read from that line's source: the function is a plain function reached by a name or a module attribute
  and its code is the site's; every argument is a name, a constant, an attribute of a module or an instance's own
  attribute, an item of a tensor, array, list, tuple or dict, or a tuple/list of these (nothing that runs the
  program's code: no call, no property, no operator on the program's objects);
- the function passes the containment rule (``containment.function_unsafe_reason``: no global or closure writes, no
  I/O, only torch/math and immutable constants reached by name);
- it runs on private copies of its arguments (``containment.private_copy``: the function may write to them), under a
  forked RNG stream.

Otherwise nothing runs, and the caller reports the birth found later, at the call's frame (``boundaries``).
Called by ``boundaries`` (the ``backward()`` boundary).
"""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import sys
import types
from typing import Any

from tensorsight.agent.runtime.tensor_walk import is_array, is_tensor
from tensorsight.agent.runtime.untraced_hooks import traced_call
from tensorsight.agent.sentinel.containment import function_unsafe_reason, private_copy
from tensorsight.agent.sentinel.reading import running_frame, tensors_in
from tensorsight.agent.sentinel.replay import ReplayMode, replay_context
from tensorsight.agent.sentinel.sites import Site
from tensorsight.agent.sentinel.state import Call
from tensorsight.core.l10n import t

MAX_SOURCE_LINES = 50_000  # larger files are not parsed to find the call

_trees: dict[str, ast.Module | None] = {}


class NotRepeatable(Exception):
    """Why the call is not replayed."""


def replay_call(site: Site) -> str | None:
    """Replay the call of ``site``'s function from its still-running caller; the replay reports (and stops at) the
    birth it finds. Returns None when it reported, else why not."""
    if site.caller is None:
        return t("the function's caller was not seen")
    caller_code, caller_line = site.caller
    frame = running_frame(caller_code)
    if frame is None:
        return t("the function's caller has returned")
    try:
        call = _call_at(caller_code.co_filename, caller_line, site.code.co_name)
        func = _value(call.func, frame)
        if not isinstance(func, types.FunctionType) or func.__code__ is not site.code:
            raise NotRepeatable(t("the call at line {0} is not {1}() as seen", caller_line, site.function))
        torch = sys.modules["torch"]
        with torch.no_grad():
            args = [_value(arg, frame) for arg in call.args]
            kwargs = {keyword.arg: _value(keyword.value, frame) for keyword in call.keywords if keyword.arg}
        if len(kwargs) != len(call.keywords):
            raise NotRepeatable(t("the call unpacks keyword arguments"))
        reason = function_unsafe_reason(func, tensors_in((args, kwargs)))
        if reason is not None:
            raise NotRepeatable(reason)
        with torch._C.DisableTorchFunction():  # our copies: no mode sees them, no subclass __torch_function__ runs
            _, copied, kwargs = private_copy(None, tuple(args), kwargs)
    except NotRepeatable as why:
        return str(why)
    except Exception as exc:  # noqa: BLE001 - a value we could not read: no replay
        return t("the call could not be read ({0}: {1})", type(exc).__name__, exc)
    return _run(func, copied, kwargs)


def _run(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    torch = sys.modules["torch"]
    cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    call = Call(None, torch.get_rng_state(), cuda_rng, [], True)
    replay = ReplayMode({}, None, None, None)
    with torch.enable_grad(), replay_context(call, replay):
        traced_call(func, *args, **kwargs)  # the program's function (on copies): its breakpoints stop as before
    return None if replay.found is not None else t("a second run of the function made no NaN/Inf")


def _call_at(filename: str, line: int, name: str) -> ast.Call:
    """The call of ``name`` on ``line`` of the file (the innermost, when calls nest)."""
    tree = _trees.get(filename)
    if filename not in _trees:
        lines = linecache.getlines(filename)
        tree = ast.parse("".join(lines)) if 0 < len(lines) <= MAX_SOURCE_LINES else None
        _trees[filename] = tree
    if tree is None:
        raise NotRepeatable(t("the caller's source is not available"))
    found = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and node.lineno <= line <= (node.end_lineno or node.lineno)
        and _callee_name(node.func) == name
    ]
    if len(found) != 1:
        raise NotRepeatable(t("line {0} does not hold exactly one call of {1}()", line, name))
    return found[0]


def _callee_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


_SUBSCRIPTABLE = (list, tuple, dict, str)


def _value(node: ast.expr, frame: types.FrameType) -> Any:
    """The value of an argument expression, read without running the program's code (see the module docstring)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        for scope in (frame.f_locals, frame.f_globals, vars(builtins)):
            if node.id in scope:
                return scope[node.id]
        raise NotRepeatable(t("{0} is not defined there", node.id))
    if isinstance(node, ast.Attribute):
        owner = _value(node.value, frame)
        if isinstance(owner, types.ModuleType):
            return inspect.getattr_static(owner, node.attr)
        own = getattr(owner, "__dict__", None)
        if isinstance(own, dict) and node.attr in own:
            return own[node.attr]
        raise NotRepeatable(t("reading .{0} could run the program's code", node.attr))
    if isinstance(node, ast.Subscript):
        base = _value(node.value, frame)
        if not (is_tensor(base) or is_array(base) or isinstance(base, _SUBSCRIPTABLE)):
            raise NotRepeatable(t("indexing a {0} could run the program's code", type(base).__name__))
        return base[_value(node.slice, frame)]
    if isinstance(node, ast.Slice):
        parts = (node.lower, node.upper, node.step)
        return slice(*(_value(part, frame) if part is not None else None for part in parts))
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_value(item, frame) for item in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        operand = _value(node.operand, frame)
        if isinstance(operand, (int, float)) and not isinstance(operand, bool):
            return -operand
    raise NotRepeatable(t("the argument {0} could run the program's code", ast.unparse(node)))
