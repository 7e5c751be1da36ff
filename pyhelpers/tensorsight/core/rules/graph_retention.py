"""Rules about autograd graphs kept alive across training steps (TS104, TS107).

TS104: ``total += loss`` (or ``losses.append(loss)``) across optimizer steps keeps every step's graph referenced,
the PyTorch FAQ's first memory leak; ``loss.item()`` or ``loss.detach()`` is what was meant. TS107: a recurrent
hidden state fed back into the model every iteration without ``.detach()``, so each backward reaches through the
whole history.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import replace

from tensorsight.core.findings import Finding
from tensorsight.core.l10n import t
from tensorsight.core.rules.facts import (
    Assignments,
    LoopFacts,
    ModuleFacts,
    Scope,
    dotted,
    last_name,
    looks_like_model,
    method,
    names_in,
    position,
    receiver,
    text_of,
    words,
)
from tensorsight.core.rules.fixes import insert_after_node, make_fix, replace_node
from tensorsight.core.rules.model import RuleInfo

Function = ast.FunctionDef | ast.AsyncFunctionDef

GRAPH_ACCUMULATED = RuleInfo(
    "TS104",
    "graph-accumulated-across-steps",
    "training-logic",
    "warning",
    "a tensor with an autograd graph is accumulated across training steps: every step's graph stays alive and "
    "memory grows; accumulate loss.item() (or loss.detach())",
    seen_at_runtime_as="memory",
)
HIDDEN_NOT_DETACHED = RuleInfo(
    "TS107",
    "hidden-state-not-detached",
    "training-logic",
    "warning",
    "the hidden state is fed back every iteration without .detach(): each backward() reaches through all earlier "
    "iterations (slower every step, more memory, or a 'backward through the graph a second time' error)",
    seen_at_runtime_as="memory",
    raised_at_runtime_check="graph-reused",
)

_LOSS_CALLEE = re.compile(r"loss|criterion|entropy|kl_div|nll", re.IGNORECASE)
_GRAPH_KEEPING_METHODS = frozenset(
    {"sum", "mean", "clone", "squeeze", "unsqueeze", "view", "reshape", "float", "double", "half", "to", "cpu", "abs"}
)
# A carried value is recurrent state when its name or the callee says so; ``ema = update(ema, model)`` is not.
_STATE_WORDS = frozenset(
    {"hidden", "hid", "h", "hx", "cx", "c", "h0", "c0", "hn", "cn", "hc", "state", "states", "memory", "mem"}
    | {"mems", "carry", "context", "ctx"}
)
_RECURRENT_WORDS = frozenset({"rnn", "lstm", "gru", "cell", "recurrent", "rnncell", "lstmcell", "grucell"})
_TENSOR_CONSTRUCTORS = frozenset({"zeros", "ones", "randn", "rand", "empty", "full", "zeros_like", "randn_like"})


# ----------------------------------------------------------------------------------------------------------- TS104
def check_accumulation(facts: ModuleFacts, path: str) -> Iterator[Finding]:
    candidates: list[ast.stmt] = [*facts.aug_assigns, *facts.assigns, *facts.expressions]
    candidates.sort(key=position)
    backprop = _BackpropagatedNames(facts)
    for stmt in candidates:
        accumulation = _accumulation(stmt)
        if accumulation is None:
            continue
        scope = facts.scope_of.get(stmt)
        if isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
            finding = _accumulation_finding(facts, path, scope, stmt, accumulation, backprop)
            if finding is not None:
                yield finding
    yield from _accumulated_through_calls(facts, path, backprop)


def _accumulated_through_calls(facts: ModuleFacts, path: str, backprop: _BackpropagatedNames) -> Iterator[Finding]:
    """``losses.update(loss, n)`` in a training loop, where the project's ``AverageMeter.update(self, val, n)`` does
    ``self.sum += val * n``: the meter keeps every step's graph. Reported at the call, where ``.item()`` belongs."""
    done: set[int] = set()
    for loop in facts.loops:
        if not (loop.steps or _steps_through_helper(facts, loop)):
            continue
        for call in loop.calls:
            if id(call) in done or facts.under_grad_disabled(call):
                continue
            done.add(id(call))
            scope = facts.scope_of.get(call)
            if not isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for owner, fn in _functions_called(facts, call):
                finding = _call_accumulation(facts, path, scope, call, owner, fn, backprop)
                if finding is not None:
                    yield finding
                    break


def _call_accumulation(
    facts: ModuleFacts,
    path: str,
    scope: Scope,
    call: ast.Call,
    owner: ModuleFacts,
    fn: Function,
    backprop: _BackpropagatedNames,
) -> Finding | None:
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    shift = 1 if params[:1] == ["self"] and isinstance(call.func, ast.Attribute) else 0
    for param, target in _accumulated_parameters(owner, fn):
        index = params.index(param) - shift if param in params else -1
        argument = next((k.value for k in call.keywords if k.arg == param), None)
        if argument is None and 0 <= index < len(call.args):
            argument = call.args[index]
        if argument is None or isinstance(argument, ast.Starred):
            continue
        graph_name = _graph_name(facts, facts.assignments, scope, argument, position(call))
        if graph_name is None:
            continue
        suffix = ".item()" if graph_name.id in backprop.roots.get(id(scope), set()) else ".detach()"
        fix = make_fix(
            t("Accumulate {0} instead of the tensor", graph_name.id + suffix),
            [insert_after_node(facts, graph_name, suffix)],
        )
        message = t(
            "{name} is passed to {function}(), which accumulates it into {target} across training steps with its "
            "autograd graph: every step's graph stays alive and memory grows each step; pass {replacement}",
            name=graph_name.id,
            function=fn.name,
            target=target,
            replacement=graph_name.id + suffix,
        )
        return GRAPH_ACCUMULATED.finding(path, facts.span(call), message, fix)
    return None


def _accumulated_parameters(facts: ModuleFacts, fn: Function) -> list[tuple[str, str]]:
    """(parameter, target) for each ``self.sum += val * n`` / ``global total; total += val`` in ``fn`` that adds a
    parameter, unchanged since the call, into state kept between calls."""
    key = ("accumulated-parameters", id(fn))
    cached = facts.memo.get(key)
    if isinstance(cached, list):
        return cached
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    rebound = set(facts.assignments.of(fn))
    found: list[tuple[str, str]] = []
    for node in facts.local_nodes(fn):
        accumulation = _accumulation(node)
        if accumulation is None or facts.under_grad_disabled(node):
            continue
        target, added, _ = accumulation
        if not _outlives_the_call(fn, target):
            continue
        for name in sorted(names_in(added)):
            if name in params and name != "self" and name not in rebound and _graph_carrying(added, name):
                found.append((name, target))
    facts.memo[key] = found
    return found


def _graph_carrying(expr: ast.expr, name: str) -> bool:
    """``name`` reaches ``expr``'s value as a tensor (``val * n``), not through ``float(val)`` or ``val.item()``."""
    if isinstance(expr, ast.Name):
        return expr.id == name
    if isinstance(expr, ast.BinOp):
        return _graph_carrying(expr.left, name) or _graph_carrying(expr.right, name)
    if isinstance(expr, ast.UnaryOp):
        return _graph_carrying(expr.operand, name)
    return False


class _BackpropagatedNames:
    """Per scope, from the backward() calls: every name they mention, and the names backpropagated directly."""

    def __init__(self, facts: ModuleFacts) -> None:
        self.mentioned: dict[int, set[str]] = {}
        self.roots: dict[int, set[str]] = {}
        for found in facts.backward_calls:
            key = id(facts.scope_of.get(found.call))
            mentioned = self.mentioned.setdefault(key, set())
            mentioned |= names_in(found.call)
            mentioned |= {text_of(n) for n in ast.walk(found.call) if isinstance(n, ast.Attribute)}
            if isinstance(found.root, ast.Name):
                self.roots.setdefault(key, set()).add(found.root.id)


def _accumulation_finding(
    facts: ModuleFacts,
    path: str,
    scope: Scope,
    stmt: ast.stmt,
    accumulation: tuple[str, ast.expr, bool],
    backprop: _BackpropagatedNames,
) -> Finding | None:
    target, added, is_append = accumulation
    root = target.split(".", 1)[0].split("[", 1)[0]
    mentioned = backprop.mentioned.get(id(scope), set())
    if root in mentioned or (target.startswith("self.") and target in mentioned):
        return None  # accumulated on purpose, then backpropagated (gradient accumulation)
    if not is_append and facts.under_grad_disabled(stmt):
        return None
    if not _spans_optimizer_steps(facts, stmt, target):
        return None
    graph_name = _graph_name(facts, facts.assignments, scope, added, position(stmt))
    if graph_name is None:
        return None
    suffix = ".item()" if graph_name.id in backprop.roots.get(id(scope), set()) else ".detach()"
    fix = make_fix(
        t("Accumulate {0} instead of the tensor", graph_name.id + suffix),
        [insert_after_node(facts, graph_name, suffix)],
    )
    verb = t("appended to {0}", target) if is_append else t("accumulated into {0}", target)
    message = t(
        "{name} is {verb} across training steps with its autograd graph: every step's graph stays "
        "alive and memory grows each step; use {replacement}",
        name=graph_name.id,
        verb=verb,
        replacement=graph_name.id + suffix,
    )
    return GRAPH_ACCUMULATED.finding(path, facts.span(stmt), message, fix)


def _accumulation(stmt: ast.AST) -> tuple[str, ast.expr, bool] | None:
    """(target text, added expression, is_append) for ``t += e``, ``t = t + e`` and ``t.append(e)``."""
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add):
        if isinstance(stmt.target, (ast.Name, ast.Attribute)):
            return text_of(stmt.target), stmt.value, False
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, ast.BinOp):
        target = stmt.targets[0]
        if isinstance(target, (ast.Name, ast.Attribute)) and isinstance(stmt.value.op, ast.Add):
            key = text_of(target)
            left, right = stmt.value.left, stmt.value.right
            if text_of(left) == key:
                return key, right, False
            if text_of(right) == key:
                return key, left, False
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        recv = receiver(call)
        if method(call) == "append" and recv is not None and len(call.args) == 1 and dotted(recv):
            return text_of(recv), call.args[0], True
    return None


def _spans_optimizer_steps(facts: ModuleFacts, stmt: ast.AST, target: str) -> bool:
    """The target survives from one iteration to the next of a loop that takes optimizer steps: a loop around it,
    or, for a module global (``global running``) or an attribute (``self.total``) accumulated in a function, a loop
    around a call of that function (the function, or that loop, taking the steps)."""
    for loop in facts.enclosing_loops(stmt):
        if _reset_each_iteration(facts, loop, stmt, target):
            return False
        if facts.loop_facts(loop).steps or _steps_through_helper(facts, facts.loop_facts(loop)):
            return True
    function = facts.enclosing_function(stmt)
    if function is None or facts.enclosing_loops(stmt) or not _outlives_the_call(function, target):
        return False
    steps_itself = any(isinstance(n, ast.Call) and facts.step_call(n) is not None for n in facts.local_nodes(function))
    sites = facts.project.call_sites(function) if facts.project is not None else []
    sites += [(facts, c) for c in facts.calls if _steps_with_closure(facts, c, function.name)]
    for caller, call in sites:
        for loop in caller.enclosing_loops(call):
            loop_facts = caller.loop_facts(loop)
            if steps_itself or loop_facts.steps or _steps_through_helper(caller, loop_facts):
                return True
    return False


def _steps_with_closure(facts: ModuleFacts, call: ast.Call, name: str) -> bool:
    """``optimizer.step(closure)``: the step calls ``closure`` (LBFGS), once or more per step."""
    if facts.step_call(call) is None:
        return False
    given = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "closure"), None)
    return isinstance(given, ast.Name) and given.id == name


def _outlives_the_call(function: Function, target: str) -> bool:
    """``target`` is kept between calls: declared ``global``/``nonlocal`` in the function, or a ``self.`` attribute."""
    if target.startswith("self."):
        return True
    declared = {
        name for node in ast.walk(function) if isinstance(node, (ast.Global, ast.Nonlocal)) for name in node.names
    }
    return target in declared


def _reset_each_iteration(facts: ModuleFacts, loop: ast.AST, stmt: ast.AST, target: str) -> bool:
    body = getattr(loop, "body", [])
    holder: ast.AST = stmt
    for parent in facts.ancestors(stmt):
        if parent is loop:
            break
        holder = parent
    if holder not in body:
        return False
    for earlier in body[: body.index(holder)]:
        if isinstance(earlier, (ast.Assign, ast.AnnAssign)) and target in [text_of(t) for t in _targets(earlier)]:
            return True
    return False


def _targets(stmt: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return list(stmt.targets) if isinstance(stmt, ast.Assign) else [stmt.target]


def _graph_name(
    facts: ModuleFacts, assignments: Assignments, scope: Scope, expr: ast.expr, where: tuple[int, int]
) -> ast.Name | None:
    """The Name in ``expr`` that carries an autograd graph into the accumulation, if any."""
    if isinstance(expr, ast.Name):
        return expr if _tainted(facts, assignments, scope, expr.id, where, 0) else None
    if isinstance(expr, ast.BinOp):
        return _graph_name(facts, assignments, scope, expr.left, where) or _graph_name(
            facts, assignments, scope, expr.right, where
        )
    if isinstance(expr, ast.UnaryOp):
        return _graph_name(facts, assignments, scope, expr.operand, where)
    return None


def _tainted(
    facts: ModuleFacts, assignments: Assignments, scope: Scope, name: str, where: tuple[int, int], depth: int
) -> bool:
    if depth > 8:
        return False
    found = assignments.last_before(scope, name, where)
    if found is None:
        return False
    node, value = found
    if facts.under_grad_disabled(node):
        return False
    if value is None:
        return _unpacked_loss(facts, assignments, scope, node, name, depth)
    return _graph_value(facts, assignments, scope, value, position(node), depth + 1)


def _unpacked_loss(
    facts: ModuleFacts, assignments: Assignments, scope: Scope, node: ast.AST, name: str, depth: int
) -> bool:
    """``logits, loss = model(x, y)`` (nanoGPT) or ``loss, acc = step(batch)``: the element named as a loss, from
    a call that produces a graph."""
    if not isinstance(node, ast.Assign) or "loss" not in words(name):
        return False
    return _graph_value(facts, assignments, scope, node.value, position(node), depth + 1)


def _graph_value(
    facts: ModuleFacts, assignments: Assignments, scope: Scope, value: ast.expr, where: tuple[int, int], depth: int
) -> bool:
    if isinstance(value, ast.Name):
        return _tainted(facts, assignments, scope, value.id, where, depth)
    if isinstance(value, ast.Attribute):
        return value.attr == "loss"  # e.g. Hugging Face ``outputs.loss``
    if isinstance(value, ast.Subscript):  # ``outputs["loss"]``, ``out[0]`` of a model's output
        key = value.slice
        named_loss = isinstance(key, ast.Constant) and isinstance(key.value, str) and "loss" in words(key.value)
        return named_loss and _graph_value(facts, assignments, scope, value.value, where, depth + 1)
    if isinstance(value, (ast.BinOp, ast.UnaryOp)):
        parts = [value.left, value.right] if isinstance(value, ast.BinOp) else [value.operand]
        return any(_graph_value(facts, assignments, scope, part, where, depth) for part in parts)
    if isinstance(value, ast.Call):
        callee = last_name(value.func) or ""
        recv = receiver(value)
        if callee in _GRAPH_KEEPING_METHODS and recv is not None:
            return _graph_value(facts, assignments, scope, recv, where, depth)
        if isinstance(value.func, ast.Attribute) and callee in {"item", "detach", "tolist", "numpy", "cpu"}:
            return False
        if facts.step_call(value) is not None:  # ``loss = optimizer.step(closure)`` returns the closure's loss
            closure = (
                value.args[0] if value.args else next((k.value for k in value.keywords if k.arg == "closure"), None)
            )
            if not isinstance(closure, ast.Name) or depth >= 6:
                return False
            return any(_returns_graph(facts, fn, depth) for fn in facts.local_functions(closure.id))
        if _LOSS_CALLEE.search(callee):
            return True
        if isinstance(value.func, (ast.Name, ast.Attribute)) and looks_like_model(value.func):
            return True
        if isinstance(value.func, ast.Name) and _module_instance(facts, scope, value.func.id, where):
            return True
        return depth < 6 and any(_returns_graph(owner, fn, depth) for owner, fn in _functions_called(facts, value))
    return False


def _module_instance(facts: ModuleFacts, scope: Scope, name: str, where: tuple[int, int]) -> bool:
    """``gpt = GPT(config)`` with a project class that defines ``forward``: calling it runs a model."""
    if facts.project is None:
        return False
    for candidate in (scope, facts.tree):
        bound = facts.assignments.last_before(candidate, name, where if candidate is scope else (1 << 30, 0))
        if bound is not None:
            located = facts.project.class_of_value(facts, bound[1])
            if located is None or not facts.project.methods(located[0], located[1], "forward"):
                return False
            return _builds_layers(located[1])  # a model, not a metric object that also has a forward()
    return False


_LAYER_CONSTRUCTOR = re.compile(r"^(torch\.)?nn\.[A-Z]")


def _builds_layers(cls: ast.ClassDef) -> bool:
    return any(
        isinstance(n, ast.Call) and _LAYER_CONSTRUCTOR.match(dotted(n.func) or "") is not None for n in ast.walk(cls)
    )


def _functions_called(facts: ModuleFacts, call: ast.Call) -> list[tuple[ModuleFacts, Function]]:
    """The project functions a call reaches: ``step(...)``, ``self.step(...)``, ``engine.step(...)``."""
    func = call.func
    if isinstance(func, ast.Name) and facts.defines_function(func.id):
        return [(facts, fn) for fn in facts.local_functions(func.id)]
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        return [(facts, fn) for fn in facts.local_functions(func.attr)]
    return facts.project.functions_called(facts, call) if facts.project is not None else []


def _returns_graph(facts: ModuleFacts, fn: Function, depth: int) -> bool:
    """The function returns a value that still carries its autograd graph (``return loss``, not ``loss.item()``)."""
    for node in facts.local_nodes(fn):
        if isinstance(node, ast.Return) and node.value is not None:
            values = [node.value]
            if isinstance(node.value, ast.Tuple) and node.value.elts:  # ``return loss, acc``: the loss, or the first
                values = [e for e in node.value.elts if "loss" in words(text_of(e))] or node.value.elts[:1]
            for value in values:
                if _graph_value(facts, facts.assignments, fn, value, position(node), depth + 2):
                    return True
    return False


def _steps_through_helper(facts: ModuleFacts, loop_facts: LoopFacts) -> bool:
    """A call in the loop reaches a project function that takes an optimizer step (``loss = train_step(batch)``)."""
    for call in loop_facts.calls:
        for owner, fn in _functions_called(facts, call):
            if any(isinstance(n, ast.Call) and owner.step_call(n) is not None for n in owner.local_nodes(fn)):
                return True
    return False


# ----------------------------------------------------------------------------------------------------------- TS107
def check_hidden_state(facts: ModuleFacts, path: str) -> Iterator[Finding]:
    for stmt in facts.assigns:
        call = stmt.value
        if not isinstance(call, ast.Call) or not (call.args or call.keywords):
            continue
        scope = facts.scope_of.get(stmt)
        if not isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        bound = {name for target in stmt.targets for name in _flat_targets(target)}
        for fed_back, arg_node in _fed_back(call, bound):
            if facts.under_grad_disabled(stmt):
                break
            callee_words = set(words(text_of(call.func))) if isinstance(call.func, (ast.Name, ast.Attribute)) else set()
            recurrent = _RECURRENT_WORDS & callee_words or looks_like_model(call.func)
            if not (recurrent or _STATE_WORDS & set(words(fed_back))):
                continue
            finding = _hidden_finding(facts, facts.assignments, scope, stmt, call, fed_back, arg_node, path)
            if finding is not None:
                yield finding
                break


def _flat_targets(target: ast.expr) -> list[str]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for elt in target.elts for name in _flat_targets(elt)]
    if isinstance(target, (ast.Name, ast.Attribute)):
        return [text_of(target)]
    return []


def _fed_back(call: ast.Call, bound: set[str]) -> Iterator[tuple[str, ast.expr]]:
    """(state name, the argument node carrying it) for plain names, or tuples of them, the call also rebinds."""
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        if isinstance(arg, (ast.Name, ast.Attribute)) and text_of(arg) in bound:
            yield text_of(arg), arg
        elif isinstance(arg, ast.Tuple) and arg.elts:
            texts = [text_of(e) for e in arg.elts if isinstance(e, (ast.Name, ast.Attribute))]
            if len(texts) == len(arg.elts) and any(t in bound for t in texts):
                yield texts[0], arg


def _hidden_finding(
    facts: ModuleFacts,
    assignments: Assignments,
    scope: Scope,
    stmt: ast.Assign,
    call: ast.Call,
    state: str,
    arg_node: ast.expr,
    path: str,
) -> Finding | None:
    state_names = [text_of(e) for e in arg_node.elts] if isinstance(arg_node, ast.Tuple) else [state]
    carrying_loop = None
    for loop in facts.enclosing_loops(stmt):
        if any(_reset_each_iteration(facts, loop, stmt, name) for name in state_names):
            return None
        if facts.loop_facts(loop).backwards:
            carrying_loop = loop
            break
    if carrying_loop is None:
        return None
    loop_facts = facts.loop_facts(carrying_loop)
    roots = {name.split(".")[-1] for name in state_names}
    for node in loop_facts.nodes:
        if node is stmt:
            continue
        if isinstance(node, ast.Call):
            callee = (method(node) or "").lower()
            if ("detach" in callee or "repackage" in callee) and roots & _identifiers(node):
                return None
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node is not stmt:
            if any(t in state_names for target in _targets(node) for t in _flat_targets(target)):
                return None  # re-initialised or repackaged inside the loop
            if isinstance(node.value, ast.Attribute) and node.value.attr == "data":
                return None
    loop_start = position(carrying_loop)
    initial = [assignments.last_before(scope, name, loop_start) for name in state_names]
    function = facts.enclosing_function(stmt)
    params = {a.arg for a in function.args.args} if function is not None else set()
    if any(init is None and name not in params for init, name in zip(initial, state_names, strict=True)):
        return None
    fix = None
    if isinstance(arg_node, ast.Tuple):
        fix = make_fix(
            t("Detach the carried state: {0}", f"({', '.join(n + '.detach()' for n in state_names)})"),
            [insert_after_node(facts, elt, ".detach()") for elt in arg_node.elts],
        )
    elif all(init is not None and _is_tensor_constructor(init[1]) for init in initial):
        fix = make_fix(
            t("Detach the carried state: {0}", f"{state}.detach()"),
            [replace_node(facts, arg_node, f"{state}.detach()")],
        )
    callee_text = text_of(call.func)
    message = t(
        "{state} is fed back into {callee}() every iteration without .detach(): each backward() reaches "
        "through all earlier iterations (slower every step, more memory, or a 'backward through the graph a "
        "second time' error); pass {state}.detach()",
        state=state,
        callee=callee_text,
    )
    finding = HIDDEN_NOT_DETACHED.finding(path, facts.span(call), message, fix)
    # where a run raises: the loop's backward() after the call (the second one walks the freed graph)
    raised = [b.call for b in loop_facts.backwards if position(b.call) > position(call)] or [
        b.call for b in loop_facts.backwards
    ]
    if not raised:
        return finding
    line = min(position(node) for node in raised)[0]
    return replace(finding, details={**finding.details, "raised_at": {"file": path, "line": line}})


def _identifiers(node: ast.AST) -> set[str]:
    out = names_in(node)
    out |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    return out


def _is_tensor_constructor(value: ast.expr | None) -> bool:
    if not isinstance(value, ast.Call):
        return False
    name = last_name(value.func) or ""
    return name in _TENSOR_CONSTRUCTORS or name.startswith("new_")
