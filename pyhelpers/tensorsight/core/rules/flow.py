"""Where a value comes from: the data flow the rules follow, across functions and the project's modules.

``trace(facts, expr, scope, where, matches)`` walks an expression back to the call that produced it, through
assignments and aliases (``out = probs``), tuple unpacking (``logits, loss = model(x, y)``, ``self.model, self.opt
= model, opt``), views and reshapes (``probs.view(-1, V)``), subscripts (``output[mask]``, ``out[0]``), ``return``
(of the module's functions, ``self.`` methods and the project's imported functions), models called as ``model(x)``
(their class's ``forward``, an ``nn.Sequential``'s last layer, through ``self.model`` set in ``__init__``) and
parameters back to every call site (``Trainer(model, ...)`` in another file gives ``self.model`` its class).

Called by the rules that judge what reaches a call: TS105 (softmax into cross_entropy) and TS113 (sigmoid into
BCEWithLogitsLoss), in ``losses``. ``matches`` says which producing calls the rule looks for; the answer is the
first one reached, or None. "Must" reasoning, so precision comes first: a value comes from such a call only when
every way it is produced does (every ``return`` of a function, both arms of ``a if c else b``, every call site of a
parameter); a model that applies softmax only at inference is not a softmax model. Pure and bounded: each hop goes
to an earlier binding or into a callee, at most ``MAX_DEPTH`` hops, each (expression, index) traced once per trace
(its answer kept for the other paths that reach it).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from tensorsight.core.rules.facts import (
    ModuleFacts,
    Scope,
    last_name,
    method,
    position,
    receiver,
    text_of,
)

Function = ast.FunctionDef | ast.AsyncFunctionDef
MAX_DEPTH = 24
_END = (1 << 30, 0)

# Tensor methods whose result holds the same values, rearranged or converted: the value flows through them.
_SAME_VALUES = frozenset(
    {"view", "reshape", "flatten", "squeeze", "unsqueeze", "contiguous", "permute", "transpose", "float"}
    | {"double", "half", "to", "cpu", "cuda", "clone", "view_as", "reshape_as", "expand", "expand_as", "type"}
    | {"narrow", "select", "index_select", "masked_select", "t", "movedim", "swapaxes"}
)
_TENSOR_MODULES = frozenset({"torch", "F", "functional", "nn", "np", "numpy"})
# Wrappers that return the module they are given (``torch.compile(model)``, ``DataParallel(model)``).
_MODULE_WRAPPERS = frozenset({"compile", "DataParallel", "DistributedDataParallel", "to", "cuda", "cpu", "train"})


@dataclass(frozen=True)
class Origin:
    """A producing call reached by the trace: ``node`` in ``facts``' module, inside a method of ``owner`` (if any).
    ``constructed``: ``node`` builds the module that was applied (``nn.Softmax(dim=1)`` ending a Sequential)."""

    facts: ModuleFacts
    node: ast.Call
    owner: ast.ClassDef | None
    constructed: bool = False


Matcher = Callable[[Origin], bool]


def trace(
    facts: ModuleFacts, expr: ast.expr, scope: ast.AST, where: tuple[int, int], matches: Matcher
) -> Origin | None:
    """The producing call ``matches`` accepts that ``expr`` (evaluated in ``scope`` at ``where``) always comes
    from, or None."""
    return _Tracer(matches).value(facts, expr, scope, where, None, 0)


class _Tracer:
    def __init__(self, matches: Matcher) -> None:
        self.matches = matches
        self.known: dict[tuple[int, int | None], Origin | None] = {}

    # ----------------------------------------------------------------- values
    def value(
        self, facts: ModuleFacts, expr: ast.expr, scope: ast.AST, where: tuple[int, int], index: int | None, depth: int
    ) -> Origin | None:
        key = (id(expr), index)
        if key in self.known:  # reached again by another path (a diamond in the call graph): the same answer
            return self.known[key]
        if depth > MAX_DEPTH:
            return None
        self.known[key] = None  # while it is being traced: a cycle comes back empty-handed
        found = self._value(facts, expr, scope, where, index, depth)
        self.known[key] = found
        return found

    def _value(
        self, facts: ModuleFacts, expr: ast.expr, scope: ast.AST, where: tuple[int, int], index: int | None, depth: int
    ) -> Origin | None:
        if isinstance(expr, (ast.Name, ast.Attribute)):
            bound = self.bindings(facts, expr, scope, where, depth)
            return self.every(bound, index, depth)
        if isinstance(expr, ast.Subscript):
            key_node = expr.slice
            if isinstance(key_node, ast.Constant) and isinstance(key_node.value, int) and index is None:
                return self.value(facts, expr.value, scope, where, key_node.value, depth + 1)  # ``out[0]``
            return self.value(facts, expr.value, scope, where, index, depth + 1)  # ``output[mask]``, ``x[:, -1]``
        if isinstance(expr, (ast.Tuple, ast.List)):
            if index is None or not -len(expr.elts) <= index < len(expr.elts):
                return None
            return self.value(facts, expr.elts[index], scope, where, None, depth + 1)
        if isinstance(expr, ast.IfExp):
            first = self.value(facts, expr.body, scope, where, index, depth + 1)
            second = self.value(facts, expr.orelse, scope, where, index, depth + 1) if first else None
            return first if second else None
        if isinstance(expr, ast.Call):
            return self.call(facts, expr, scope, where, index, depth)
        return None

    def every(self, bound: list[_Bound], index: int | None, depth: int) -> Origin | None:
        """The origin every binding comes from (the first one's, when all have one)."""
        found = None
        for item in bound:
            if item.index is not None and index is not None:
                return None  # an element of an element (``a, b = f()`` then ``a[0]``): not followed
            element = item.index if item.index is not None else index
            origin = self.value(item.facts, item.expr, item.scope, item.where, element, depth + 1)
            if origin is None:
                return None
            found = found or origin
        return found

    def call(
        self, facts: ModuleFacts, call: ast.Call, scope: ast.AST, where: tuple[int, int], index: int | None, depth: int
    ) -> Origin | None:
        if index is None:
            origin = Origin(facts, call, _class_of(facts, scope))
            if self.matches(origin):
                return origin
        name = method(call)
        recv = receiver(call)
        if name in _SAME_VALUES and recv is not None:
            if last_name(recv) in _TENSOR_MODULES:  # ``torch.flatten(x, 1)``
                return self.value(facts, call.args[0], scope, where, index, depth + 1) if call.args else None
            return self.value(facts, recv, scope, where, index, depth + 1)
        for owner, fn in functions_called(facts, call):
            return self.returns(owner, fn, index, depth)
        if isinstance(call.func, ast.Name) and call.func.id == "self":  # ``self(x)`` in a Lightning-style step
            cls = _class_of(facts, scope)
            forward = facts.project.methods(facts, cls, "forward") if cls is not None and facts.project else []
            return self.returns(facts, forward[0], index, depth) if forward else None
        for owner, built, built_scope in self.instances(facts, call.func, scope, where, depth):
            if last_name(built.func) == "Sequential":
                if index is None and built.args and isinstance(built.args[-1], ast.Call):
                    tail = Origin(owner, built.args[-1], _class_of(owner, built_scope), constructed=True)
                    return tail if self.matches(tail) else None
                return None
            located = owner.project.class_of_value(owner, built) if owner.project is not None else None
            if located is not None:
                forward = owner.project.methods(located[0], located[1], "forward")  # type: ignore[union-attr]
                if forward:
                    return self.returns(located[0], forward[0], index, depth)
        return None

    def returns(self, facts: ModuleFacts, fn: Function, index: int | None, depth: int) -> Origin | None:
        """What every ``return`` of ``fn`` gives (``yield`` or no return: nothing known)."""
        found = None
        returned = False
        for node in facts.local_nodes(fn):
            if isinstance(node, (ast.Yield, ast.YieldFrom)):
                return None
            if isinstance(node, ast.Return):
                returned = True
                if node.value is None:
                    return None
                origin = self.value(facts, node.value, fn, position(node), index, depth + 1)
                if origin is None:
                    return None
                found = found or origin
        return found if returned else None

    # ----------------------------------------------------------------- bindings
    def bindings(
        self, facts: ModuleFacts, expr: ast.Name | ast.Attribute, scope: ast.AST, where: tuple[int, int], depth: int
    ) -> list[_Bound]:
        """The expressions a name or ``self.x`` was last given before ``where``: one for an assignment, one per
        call site for a parameter; [] when unknown."""
        text = text_of(expr)
        if isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
            found = facts.assignments.last_before(scope, text, where)
            if found is not None:
                return _from_assignment(facts, found[0], found[1], text, scope)
            if text in facts.assignments.of(scope):
                return []  # bound only later (a loop-carried value): not followed
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if isinstance(expr, ast.Name) and expr.id in _params(scope):
                return self.arguments(facts, scope, expr.id, depth)
            if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
                return _attribute_bindings(facts, scope, expr.attr)
            if isinstance(expr, ast.Name):
                found = facts.assignments.last_before(facts.tree, text, _END)
                if found is not None:
                    return _from_assignment(facts, found[0], found[1], text, facts.tree)
        return []

    def arguments(self, facts: ModuleFacts, fn: Function, param: str, depth: int) -> list[_Bound]:
        """The argument given for ``param`` at every call site of ``fn`` in the project ([] if any is unknown)."""
        project = facts.project
        if project is None or depth > MAX_DEPTH:
            return []
        params = _params(fn)
        method_of = isinstance(facts.parents.get(fn), ast.ClassDef)
        position_index = params.index(param) - (1 if method_of and params and params[0] == "self" else 0)
        if fn.name == "__init__" and method_of:
            cls = facts.parents[fn]
            assert isinstance(cls, ast.ClassDef)
            sites = project.constructions(cls)
        else:
            sites = project.call_sites(fn)
        out: list[_Bound] = []
        for caller, call in sites:
            argument = _argument(call, param, position_index)
            caller_scope = caller.scope_of.get(call)
            if argument is None or caller_scope is None:
                return []
            out.append(_Bound(caller, argument, caller_scope, position(call), None))
        return out

    def instances(
        self, facts: ModuleFacts, func: ast.expr, scope: ast.AST, where: tuple[int, int], depth: int
    ) -> list[tuple[ModuleFacts, ast.Call, ast.AST]]:
        """The calls that built a called object (``model = GPT(cfg)``, ``criterion = nn.CrossEntropyLoss()``),
        through aliases, wrappers (``.to(device)``, ``torch.compile``), parameters and ``self.model``."""
        if not isinstance(func, (ast.Name, ast.Attribute)) or depth > MAX_DEPTH:
            return []
        pending = self.bindings(facts, func, scope, where, depth)
        out: list[tuple[ModuleFacts, ast.Call, ast.AST]] = []
        hops = 0
        while pending and hops < MAX_DEPTH:
            hops += 1
            item = pending.pop()
            value: ast.expr | None = item.expr
            if isinstance(value, (ast.Tuple, ast.List)) and item.index is not None:
                value = value.elts[item.index] if -len(value.elts) <= item.index < len(value.elts) else None
            elif item.index is not None:
                continue  # an element of what a call returned: not an object this follows
            while isinstance(value, ast.Call) and last_name(value.func) in _MODULE_WRAPPERS:
                wrapped = receiver(value) if last_name(value.func) in ("to", "cuda", "cpu", "train") else None
                value = wrapped if wrapped is not None else (value.args[0] if value.args else None)
            if isinstance(value, (ast.Name, ast.Attribute)):
                pending.extend(self.bindings(item.facts, value, item.scope, item.where, depth + hops))
            elif isinstance(value, ast.Call):
                out.append((item.facts, value, item.scope))
        return out


def built_by(facts: ModuleFacts, expr: ast.expr, scope: ast.AST, where: tuple[int, int]) -> list[ast.Call]:
    """The constructor calls an object was built by (``self.criterion`` -> ``nn.CrossEntropyLoss()``, from a
    ``Trainer(criterion=...)`` call in another file), [] when unknown."""
    return [call for _, call, _ in _Tracer(lambda origin: False).instances(facts, expr, scope, where, 0)]


@dataclass(frozen=True)
class _Bound:
    """An expression a name was bound to: evaluate ``expr`` in ``scope`` at ``where``, element ``index`` of it."""

    facts: ModuleFacts
    expr: ast.expr
    scope: ast.AST
    where: tuple[int, int]
    index: int | None


def _from_assignment(
    facts: ModuleFacts, node: ast.AST, value: ast.expr | None, text: str, scope: Scope
) -> list[_Bound]:
    where = position(node)
    if value is not None:
        return [_Bound(facts, value, scope, where, None)]
    if isinstance(node, ast.Assign):  # ``a, b = x, y`` or ``logits, loss = model(x, y)``
        for target in node.targets:
            if isinstance(target, (ast.Tuple, ast.List)):
                for i, element in enumerate(target.elts):
                    if isinstance(element, (ast.Name, ast.Attribute)) and text_of(element) == text:
                        return [_Bound(facts, node.value, scope, where, i)]
    return []  # a loop variable, a ``with ... as`` name: not followed


def _attribute_bindings(facts: ModuleFacts, method_node: Function, attr: str) -> list[_Bound]:
    """``self.attr`` read in a method: what the class's methods assign to it (each assignment must agree)."""
    cls = facts.parents.get(method_node)
    if not isinstance(cls, ast.ClassDef):
        return []
    text = f"self.{attr}"
    out: list[_Bound] = []
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for _, binding, value in facts.assignments.of(node).get(text, []):
                out.extend(_from_assignment(facts, binding, value, text, node) or [None])  # type: ignore[list-item]
    return [] if any(item is None for item in out) else out


def _params(fn: Function) -> list[str]:
    return [a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)]


def _argument(call: ast.Call, param: str, index: int) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == param:
            return keyword.value
    if 0 <= index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        return call.args[index]
    return None


def _class_of(facts: ModuleFacts, scope: ast.AST) -> ast.ClassDef | None:
    parent = facts.parents.get(scope)
    return parent if isinstance(parent, ast.ClassDef) else None


def functions_called(facts: ModuleFacts, call: ast.Call) -> list[tuple[ModuleFacts, Function]]:
    """The project functions a call reaches: ``f(...)``, ``self.f(...)``, ``engine.f(...)``, ``obj.method(...)``."""
    func = call.func
    if isinstance(func, ast.Name) and facts.defines_function(func.id):
        return [(facts, fn) for fn in facts.local_functions(func.id) if facts.scope_of.get(fn) is facts.tree]
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        return [(facts, fn) for fn in facts.local_functions(func.attr)]
    return facts.project.functions_called(facts, call) if facts.project is not None else []
