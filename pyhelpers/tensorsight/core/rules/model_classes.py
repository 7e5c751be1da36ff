"""Which models behave differently in training and evaluation mode, known from the project's code (for TS102).

``mode_dependent_layer(facts, scope, expr, where)`` follows a model expression back to what built it, across the
project's files (an assignment in the scope, a parameter to the arguments at the function's call sites, ``self.net``
to the ``self.net = ...`` of its class, a module-level global) and names a layer that makes ``eval()`` matter:
``nn.Dropout*``, ``nn.BatchNorm*``, ``F.dropout(..., training=self.training)``, a recurrent or transformer layer
with dropout, a torchvision network with batch norm. None means "not known to have one": a model of unknown
origin is not assumed to have dropout (precision first). Pure, name-based, bounded in depth.
"""

from __future__ import annotations

import ast
import re

from tensorsight.core.rules.facts import ModuleFacts, Scope, dotted, last_name

_MODE_LAYERS = re.compile(
    r"^(Dropout[123]?d?|AlphaDropout|FeatureAlphaDropout|(Lazy)?BatchNorm[123]d|SyncBatchNorm|InstanceNorm[123]d)$"
)
# Layers whose ``dropout`` argument (non-zero) is only active in training mode; the transformer ones default to 0.1.
_DROPOUT_ARGUMENT = frozenset({"LSTM", "GRU", "RNN", "MultiheadAttention"})
_DROPOUT_BY_DEFAULT = frozenset({"Transformer", "TransformerEncoderLayer", "TransformerDecoderLayer"})
_TORCHVISION_BN = re.compile(
    r"^(resnet|resnext|wide_resnet|densenet|mobilenet|efficientnet|inception|googlenet|regnet|shufflenet|mnasnet)"
    r"|^vgg\d+_bn$"
)
_PASS_THROUGH = frozenset({"to", "cuda", "cpu", "train", "float", "double", "half", "requires_grad_"})
MAX_HOPS = 8


def mode_dependent_layer(facts: ModuleFacts, scope: Scope, expr: ast.expr, where: tuple[int, int]) -> str | None:
    """A layer of the model ``expr`` (seen in ``scope`` at ``where``) that eval() switches, else None."""
    return _of_expression(facts, scope, expr, where, 0, set())


def _of_expression(
    facts: ModuleFacts, scope: Scope, expr: ast.expr, where: tuple[int, int], depth: int, seen: set[int]
) -> str | None:
    if depth > MAX_HOPS or id(expr) in seen:
        return None
    seen.add(id(expr))
    if isinstance(expr, ast.Call):
        return _of_construction(facts, expr, depth, seen)
    if isinstance(expr, ast.Name):
        return _of_name(facts, scope, expr.id, where, depth, seen)
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
        return _of_self_attribute(facts, scope, expr.attr, depth, seen)
    return None


def _of_name(
    facts: ModuleFacts, scope: Scope, name: str, where: tuple[int, int], depth: int, seen: set[int]
) -> str | None:
    bound = facts.assignments.last_before(scope, name, where)
    if bound is not None:
        node, value = bound
        return _of_expression(facts, scope, value, _pos(node), depth + 1, seen) if value is not None else None
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        params = [a.arg for a in (*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs)]
        if name in params:
            return _of_parameter(facts, scope, params, name, depth, seen)
        # a global read inside the function: any of the module's bindings (``model = Net()`` or ``= Other()`` in
        # the branches of an if, a ``torch.load`` later)
        for position, _node, value in facts.assignments.of(facts.tree).get(name, [])[:8]:
            if value is not None:
                found = _of_expression(facts, facts.tree, value, position, depth + 1, seen)
                if found is not None:
                    return found
    return None


def _of_parameter(
    facts: ModuleFacts,
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    params: list[str],
    name: str,
    depth: int,
    seen: set[int],
) -> str | None:
    if facts.project is None:
        return None
    index = params.index(name)
    owner = facts.parents.get(function)
    constructor = function.name == "__init__" and isinstance(owner, ast.ClassDef)
    if constructor:
        assert isinstance(owner, ast.ClassDef)
        sites = facts.project.constructions(owner)
    else:
        sites = facts.project.call_sites(function)
    for caller, call in sites[:16]:
        bound_method = params and params[0] == "self" and (constructor or isinstance(call.func, ast.Attribute))
        offset = index - 1 if bound_method else index
        argument = None
        if 0 <= offset < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: offset + 1]):
            argument = call.args[offset]
        else:
            argument = next((k.value for k in call.keywords if k.arg == name), None)
        caller_scope = caller.scope_of.get(call)
        if argument is None or not isinstance(caller_scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        found = _of_expression(caller, caller_scope, argument, _pos(call), depth + 1, seen)
        if found is not None:
            return found
    return None


def _of_self_attribute(facts: ModuleFacts, scope: Scope, attr: str, depth: int, seen: set[int]) -> str | None:
    cls = next((p for p in facts.ancestors(scope) if isinstance(p, ast.ClassDef)), None)
    if cls is None:
        return None
    for node in ast.walk(cls):
        if not isinstance(node, ast.Assign):
            continue
        method_scope = facts.scope_of.get(node)
        if not isinstance(method_scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for value in _values_assigned(node, f"self.{attr}"):
            found = _of_expression(facts, method_scope, value, _pos(node), depth + 1, seen)
            if found is not None:
                return found
    return None


def _values_assigned(node: ast.Assign, target_text: str) -> list[ast.expr]:
    """What ``self.model = model`` or ``self.model, self.opt = model, opt`` gives ``target_text``."""
    out: list[ast.expr] = []
    for target in node.targets:
        if isinstance(target, ast.Attribute) and dotted(target) == target_text:
            out.append(node.value)
        elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
            if len(target.elts) == len(node.value.elts):
                out += [v for t, v in zip(target.elts, node.value.elts, strict=True) if dotted(t) == target_text]
    return out


def _of_construction(facts: ModuleFacts, call: ast.Call, depth: int, seen: set[int]) -> str | None:
    if isinstance(call.func, ast.Attribute) and call.func.attr in _PASS_THROUGH:
        scope = facts.scope_of.get(call)
        if isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
            return _of_expression(facts, scope, call.func.value, _pos(call), depth + 1, seen)
        return None
    if facts.project is not None:
        located = facts.project.class_of_value(facts, call)
        if located is not None:
            return class_layer(located[0], located[1], depth + 1)
    return _layer_in(call)


def class_layer(facts: ModuleFacts, cls: ast.ClassDef, depth: int = 0) -> str | None:
    """A mode-dependent layer built by a project ``nn.Module`` class, its project submodules or base classes."""
    if depth > MAX_HOPS:
        return None
    for node in ast.walk(cls):
        if not isinstance(node, ast.Call):
            continue
        found = _layer_of_call(node)
        if found is not None:
            return found
        if facts.project is not None and node.func is not None:
            for owner, target in facts.project.resolve_callee(facts, node.func):
                if isinstance(target, ast.ClassDef) and target is not cls:
                    inner = class_layer(owner, target, depth + 1)
                    if inner is not None:
                        return inner
    if facts.project is not None:
        for base in cls.bases:
            for owner, target in facts.project.resolve_callee(facts, base):
                if isinstance(target, ast.ClassDef) and target is not cls:
                    inner = class_layer(owner, target, depth + 1)
                    if inner is not None:
                        return inner
    return None


def _layer_in(expr: ast.AST) -> str | None:
    for node in ast.walk(expr):
        if isinstance(node, ast.Call):
            found = _layer_of_call(node)
            if found is not None:
                return found
    return None


def _layer_of_call(call: ast.Call) -> str | None:
    name = last_name(call.func) or ""
    if _MODE_LAYERS.match(name):
        return name
    if name == "dropout" and _follows_training_flag(call):
        return "F.dropout(training=self.training)"
    if name in _DROPOUT_ARGUMENT or name in _DROPOUT_BY_DEFAULT:
        value = next((k.value for k in call.keywords if k.arg == "dropout"), None)
        if value is None:
            return name if name in _DROPOUT_BY_DEFAULT else None
        if isinstance(value, ast.Constant) and not value.value:
            return None
        return f"{name}(dropout=...)"
    if _TORCHVISION_BN.match(name):
        return f"{name} (batch norm)"
    return None


def _follows_training_flag(call: ast.Call) -> bool:
    """``F.dropout(x, p, self.training)`` / ``training=self.training``: off in eval mode, unlike the default."""
    flag = next((k.value for k in call.keywords if k.arg == "training"), None)
    if flag is None and len(call.args) >= 3:
        flag = call.args[2]
    return flag is not None and (dotted(flag) or "").endswith("training")


def _pos(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
