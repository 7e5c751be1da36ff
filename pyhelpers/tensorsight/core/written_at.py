"""The line that wrote the value a call received: followed back through names, tuple unpacking and ``return``.

A check that sees a wrong value at a call (a loss whose targets are its model's inputs) is reported best where that
value was made, which is where the user changes it: ``loss = criterion(output, targets)`` received ``targets`` from
``data, targets = get_batch(source, i)``, whose ``return data, target`` returns the ``target = source[i:i + n]`` of
line 29. ``argument_written_at`` follows a name argument of the outermost call on a line back to the last assignment
before it in the same function, through plain aliases (``y = targets``), tuple unpacking of a tuple or of a call to a
function of the same file (into its ``return``), and stops at the first assignment that computes something. A value
written in the call itself (``criterion(logits, inputs.reshape(-1))``), a loop variable or a parameter gives None: the
call's own line is then the place. ``returned_written_at`` does the same for an element a function returns (what a
dataset's ``__getitem__`` gives the model). Called by ``agent.measurement.data_checks``. Pure, bounded by
``MAX_HOPS``.
"""

from __future__ import annotations

import ast

MAX_HOPS = 8
MAX_SOURCE_CHARS = 1_000_000
Scope = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef


def argument_written_at(source: str, call_line: int, position: int, keyword: str | None = None) -> int | None:
    """The line that computed argument ``position`` (or ``keyword=``) of the outermost call on ``call_line``."""
    tree = parsed(source)
    if tree is None:
        return None
    call = outermost_call(tree, call_line, position, keyword)
    if call is None:
        return None
    given = next((k.value for k in call.keywords if keyword is not None and k.arg == keyword), None)
    if given is None and position < len(call.args):
        given = call.args[position]
    if not isinstance(given, ast.Name):
        return None
    return _name_written_at(tree, _scope_of(tree, call.lineno), given.id, call.lineno, MAX_HOPS)


def returned_written_at(source: str, function_line: int, index: int) -> int | None:
    """The line that computed element ``index`` of the one ``return a, b, ...`` of the function defined at
    ``function_line`` (its ``def`` or first decorator: a code object's ``co_firstlineno``), such as the
    ``x = self.series[i:end]`` a dataset's ``__getitem__`` returns first; the ``return`` line for an element written
    there; None when the function has several returns or none of that shape."""
    tree = parsed(source)
    if tree is None:
        return None
    function = next(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and function_line in (node.lineno, *(d.lineno for d in node.decorator_list[:1]))
        ),
        None,
    )
    returned = _returned_element(function, index) if function is not None else None
    if function is None or returned is None:
        return None
    at, element = returned
    if isinstance(element, ast.Name):
        return _name_written_at(tree, function, element.id, at, MAX_HOPS) or at
    return at


def parsed(source: str) -> ast.Module | None:
    """The module's syntax tree, or None for a file too large to search (``MAX_SOURCE_CHARS``) or not Python."""
    if len(source) > MAX_SOURCE_CHARS:
        return None
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def outermost_call(tree: ast.AST, line: int, position: int, keyword: str | None) -> ast.Call | None:
    """The outermost call spanning ``line`` that has an argument ``position`` (or ``keyword=``)."""
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and node.lineno <= line <= (node.end_lineno or node.lineno)
        and (len(node.args) > position or any(k.arg == keyword for k in node.keywords if keyword is not None))
    ]
    return min(calls, key=lambda c: (c.lineno, -(c.end_lineno or c.lineno), -(c.end_col_offset or 0)), default=None)


def _scope_of(tree: ast.Module, line: int) -> Scope:
    """The innermost function whose body holds ``line``, else the module."""
    scope: Scope = tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.lineno <= line <= (node.end_lineno or node.lineno) and node.lineno >= _scope_start(scope):
                scope = node
    return scope


def _scope_start(scope: Scope) -> int:
    return 0 if isinstance(scope, ast.Module) else scope.lineno


def _statements(scope: Scope) -> list[ast.stmt]:
    """The scope's statements, nested blocks included, functions and classes inside it left out."""
    found: list[ast.stmt] = []
    pending: list[ast.AST] = list(scope.body)
    while pending:
        statement = pending.pop()
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(statement, ast.stmt):
            found.append(statement)
        for name in ("body", "orelse", "finalbody", "handlers"):
            pending.extend(s for s in getattr(statement, name, []) if isinstance(s, (ast.stmt, ast.ExceptHandler)))
    return found


def _name_written_at(tree: ast.Module, scope: Scope, name: str, before: int, hops: int) -> int | None:
    if hops <= 0:
        return None
    binding = _last_binding(scope, name, before)
    if binding is None:
        return None
    assignment, index = binding
    value = assignment.value
    if index is None:
        if isinstance(value, ast.Name):
            return _name_written_at(tree, scope, value.id, assignment.lineno, hops - 1)
        return assignment.lineno
    if isinstance(value, ast.Tuple) and index < len(value.elts):
        element = value.elts[index]
        if isinstance(element, ast.Name):
            return _name_written_at(tree, scope, element.id, assignment.lineno, hops - 1)
        return assignment.lineno
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        function = _module_function(tree, value.func.id)
        returned = _returned_element(function, index) if function is not None else None
        if function is not None and returned is not None:
            at, element = returned
            if isinstance(element, ast.Name):
                return _name_written_at(tree, function, element.id, at, hops - 1)
            return at
    return assignment.lineno


def _last_binding(scope: Scope, name: str, before: int) -> tuple[ast.Assign, int | None] | None:
    """The last ``name = ...`` (index None) or ``a, name = ...`` (its index) of ``scope`` before line ``before``."""
    best: tuple[ast.Assign, int | None] | None = None
    for statement in _statements(scope):
        if not isinstance(statement, ast.Assign) or statement.lineno >= before or len(statement.targets) != 1:
            continue
        target = statement.targets[0]
        index: int | None
        if isinstance(target, ast.Name) and target.id == name:
            index = None
        elif isinstance(target, ast.Tuple) and any(isinstance(e, ast.Name) and e.id == name for e in target.elts):
            index = next(i for i, e in enumerate(target.elts) if isinstance(e, ast.Name) and e.id == name)
        else:
            continue
        if best is None or statement.lineno > best[0].lineno:
            best = (statement, index)
    return best


def _module_function(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    return None


def _returned_element(function: ast.FunctionDef | ast.AsyncFunctionDef, index: int) -> tuple[int, ast.expr] | None:
    """``(line, element)`` of the function's one ``return a, b, ...`` (None when it has several or none)."""
    returns = [s for s in _statements(function) if isinstance(s, ast.Return)]
    if len(returns) != 1 or not isinstance(returns[0].value, ast.Tuple) or index >= len(returns[0].value.elts):
        return None
    return returns[0].lineno, returns[0].value.elts[index]
