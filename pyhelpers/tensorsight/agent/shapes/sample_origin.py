"""Where a batch value got its shape: the line of a ``Dataset.__getitem__`` that reshaped what a loss received.

A loss that broadcasts a prediction ``[B, 1]`` against a target ``[B]`` is usually fixed at the loss call; but when
the target came straight from a DataLoader batch (``for x, y in loader: loss = criterion(model(x), y)``) and the
dataset's ``__getitem__`` reshaped that element (``y = series[end:end + 1, 0].squeeze()``), the shape was made wrong
there, for every batch and every loop that reads the dataset: that is the line to fix. Called by
``broadcasts.report_broadcast`` for loss broadcasts only.

Reads only source (``ast``, ``linecache``), frame locals and plain stored attributes (``static_attribute``): no user
code runs, nothing is evaluated.
"""

from __future__ import annotations

import ast
import linecache
import os
from types import FrameType
from typing import Any

from tensorsight.agent.leakage.splits import MISSING, static_attribute
from tensorsight.agent.runtime.user_code import is_user_file
from tensorsight.core.written_at import outermost_call, parsed, returned_written_at

RESHAPING = frozenset({"squeeze", "unsqueeze", "view", "reshape", "flatten", "ravel", "expand", "view_as"})
MAX_WRAPPERS = 4  # datasets looked through (``Subset`` keeps the wrapped one in ``.dataset``)


def reshaped_in_dataset(frame: FrameType, position: int, keyword: str) -> tuple[str, int] | None:
    """``(file, line)`` of the ``__getitem__`` line that reshaped the value passed as argument ``position`` (or
    ``keyword=``) of the outermost call on ``frame``'s line, when that value is a loop variable unpacked from a
    DataLoader; None otherwise."""
    code = frame.f_code
    tree = parsed("".join(linecache.getlines(code.co_filename)))
    if tree is None:
        return None
    name = _argument_name(tree, frame.f_lineno, position, keyword)
    found = _loop_binding(tree, code.co_firstlineno, frame.f_lineno, name) if name else None
    if found is None:
        return None
    iterable, index = found
    getitem = dataset_getitem(static_attribute(frame.f_locals.get(iterable, MISSING), "dataset"))
    written = getitem_written_at(getitem, index)
    if written is None or not _reshapes(linecache.getline(*written)):
        return None
    return written


def getitem_written_at(getitem: tuple[str, int] | None, element: int) -> tuple[str, int] | None:
    """``(file, line)`` of the line of a dataset's ``__getitem__`` (``dataset_getitem``: its file and first line) that
    wrote element ``element`` of the tuple it returns (``core.written_at.returned_written_at``); None when unknown."""
    if getitem is None:
        return None
    file, first = getitem
    source = "".join(linecache.getlines(file))
    line = returned_written_at(source, first, element) if source else None
    return (file, line) if line is not None else None


def _argument_name(tree: ast.Module, line: int, position: int, keyword: str) -> str | None:
    call = outermost_call(tree, line, position, keyword)
    if call is None:
        return None
    given = next((k.value for k in call.keywords if k.arg == keyword), None)
    if given is None and position < len(call.args):
        given = call.args[position]
    return given.id if isinstance(given, ast.Name) else None


def _loop_binding(tree: ast.Module, function_line: int, line: int, name: str) -> tuple[str, int] | None:
    """``(loader name, index)`` of the ``for a, b in loader:`` around ``line`` that binds ``name`` at ``index``."""
    loops = [
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.For, ast.AsyncFor))
        and function_line <= n.lineno <= line <= (n.end_lineno or n.lineno)
        and isinstance(n.iter, ast.Name)
    ]
    for loop in sorted(loops, key=lambda n: -n.lineno):  # the innermost first
        targets = loop.target.elts if isinstance(loop.target, (ast.Tuple, ast.List)) else [loop.target]
        for index, target in enumerate(targets):
            if isinstance(target, ast.Name) and target.id == name:
                assert isinstance(loop.iter, ast.Name)
                return loop.iter.id, index
    return None


def dataset_getitem(dataset: Any) -> tuple[str, int] | None:
    """``(file, first line)`` of the user-written ``__getitem__`` that makes ``dataset``'s samples, looking through
    wrappers that keep the wrapped dataset in ``.dataset`` (``Subset``); read from class and instance dictionaries
    only (``static_attribute``), so no property or ``__getattr__`` of the program runs. Also called by the phase
    clock for each DataLoader built (``LoaderSettings.dataset_getitem``)."""
    for _ in range(MAX_WRAPPERS):
        if dataset is MISSING or dataset is None:
            return None
        function = next((k.__dict__["__getitem__"] for k in type(dataset).__mro__ if "__getitem__" in k.__dict__), None)
        code = getattr(function, "__code__", None)
        if code is not None and is_user_file(code.co_filename):
            return os.path.abspath(code.co_filename), code.co_firstlineno
        dataset = static_attribute(dataset, "dataset")
    return None


def _reshapes(text: str) -> bool:
    """Whether a source line calls a reshaping method (``.squeeze()``, ``.view(-1)``...)."""
    try:
        tree = ast.parse(text.strip())
    except SyntaxError:
        return False
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in RESHAPING
        for n in ast.walk(tree)
    )
