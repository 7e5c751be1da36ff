"""Breakpoint conditions, statically: which names a condition uses that do not exist at its line, and what to offer.

debugpy evaluates a breakpoint condition with ``eval`` in the stopped frame and treats an exception as "false", so a
condition naming a variable that does not exist at that line is a breakpoint that silently never fires. The language
server's ``tensorsight/validateCondition`` request calls ``validate_condition`` to warn about it before the user runs,
and ``tensorsight/suggestConditions`` calls ``condition_target`` (what the cursor's expression lets a condition be
about: a value, not a method, function or module) and ``suggest_conditions`` for the quick pick of "Add Tensor
Breakpoint…".

A condition runs in the user's process every time the line is reached, so one that writes (``x.add_(1)``,
``torch.mul(a, b, out=a)``, ``n := n + 1``), prints or opens files, or calls code TensorSight cannot prove harmless
(the user's own functions, ``model(x)``), changes what the program computes, as in stock debugpy; ``side_effects``
names each such part and ``validate_condition`` warns about it before the breakpoint is set. An expression nested too
deeply for Python's compiler (which debugpy could not compile either) is answered as such, never with an internal
``RecursionError``.

Pure: source text in, plain data out (no I/O, no torch). Lines are 1-based here; the server converts from LSP's
0-based lines.

Scope rules (what ``eval`` in the stopped frame can see):
- module level: module names bound before the line, builtins, and the ``tensorsight`` builtin;
- in a function: its parameters and locals bound before the line (or anywhere in an enclosing loop: they exist from
  the second iteration on), every module-level name (functions usually run after the module is loaded), and names of
  enclosing functions only when the function itself uses them (a closure keeps just those);
- in a class body: class names bound before the line and module names bound before the class.
A name that is bound on some branch only counts as defined: the check flags names with no binding at all.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tensorsight.core.l10n import t

BUILTIN_NAME = "tensorsight"

MODULE_DUNDERS = frozenset(
    {
        "__name__",
        "__file__",
        "__doc__",
        "__package__",
        "__spec__",
        "__loader__",
        "__builtins__",
        "__annotations__",
        "__cached__",
        "__debug__",
    }
)


@dataclass(frozen=True)
class Predicate:
    """One helper of the ``tensorsight`` builtin, as the editor lists it."""

    name: str
    signature: str
    description: str


# The breakpoint predicates of tensorsight.agent.conditions.predicates (a test keeps the two in step).
PREDICATES: tuple[Predicate, ...] = (
    Predicate("nan", "nan(x)", "True when x (tensor, array, number, module, optimizer, list/dict) holds a NaN"),
    Predicate("inf", "inf(x)", "True when x holds +Inf or -Inf"),
    Predicate("nonfinite", "nonfinite(x)", "True when x holds a NaN or an Inf"),
    Predicate(
        "spike",
        "spike(x, factor=3.0, warmup=5)",
        "True when |x| jumps above factor × its running level at this breakpoint (or turns NaN/Inf)",
    ),
    Predicate("grad_norm", "grad_norm(model_or_params)", "Total L2 norm of the gradients (a number to compare)"),
    Predicate("shape_is", "shape_is(x, shape)", "True when x.shape matches; None or -1 match any size, ... any dims"),
    Predicate(
        "wrong_device",
        "wrong_device(*tensors_or_modules, device=None)",
        "True when the tensors/modules are not all on one device (or not on `device`)",
    ),
    Predicate("zero", "zero(x)", "True when every element of x is exactly 0 (a dead layer, a zeroed gradient)"),
    Predicate("exploding", "exploding(x, limit=1e4)", "True when some |element| exceeds limit, or is NaN/Inf"),
    Predicate("changed", "changed(x)", "True when x differs from the last evaluation at this breakpoint"),
    Predicate(
        "grad_missing",
        "grad_missing(model_or_params)",
        "True when a trainable parameter has no gradient (backward skipped, graph detached)",
    ),
    Predicate("step", "step()", "The training step in progress, 1-based (one step = one optimizer.step())"),
    Predicate("rank", "rank()", "This process's torch.distributed rank (0 when not distributed)"),
    Predicate("world_size", "world_size()", "Number of distributed processes (1 when not distributed)"),
    Predicate("on_rank", "on_rank(*ranks)", "True on the given ranks (rank 0 when none are given)"),
)

# Runtime helpers of the builtin that are not predicates but are valid in conditions and the Debug Console.
OTHER_PUBLIC_NAMES = frozenset({"break_on_nonfinite", "last_nonfinite", "summarize", "__version__"})


def predicate_names() -> list[str]:
    return [p.name for p in PREDICATES]


# ---- validation ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConditionCheck:
    """The verdict on one condition at one line: a syntax error, or the names it uses that do not exist there."""

    syntax_error: str | None = None
    undefined: tuple[str, ...] = ()
    unknown_helpers: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())
    side_effects: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.syntax_error is None and not self.undefined and not self.unknown_helpers and not self.side_effects

    def message(self, line: int) -> str:
        """One sentence for the editor's warning (empty when the condition is fine)."""
        if self.syntax_error is not None:
            return t("The condition is not a valid Python expression: {0}.", self.syntax_error)
        parts: list[str] = []
        if self.undefined:
            names = ", ".join(f"`{n}`" for n in self.undefined)
            if len(self.undefined) == 1:
                parts.append(t("{0} is not defined at line {1}", names, line))
            else:
                parts.append(t("{0} are not defined at line {1}", names, line))
        if self.unknown_helpers:
            names = ", ".join(f"`{n}`" for n in self.unknown_helpers)
            if len(self.unknown_helpers) == 1:
                parts.append(t("{0} is not a TensorSight helper", names))
            else:
                parts.append(t("{0} are not a TensorSight helper", names))
        sentences: list[str] = []
        if parts:
            sentences.append("; ".join(parts) + t(": debugpy would treat the condition as false and never stop."))
        if self.side_effects:
            sentences.append(
                t(
                    "The condition may change the program each time the line runs ({0}): prefer a read-only check.",
                    "; ".join(self.side_effects),
                )
            )
        return " ".join(sentences)


def check_condition(
    source: str, line: int, condition: str, public_names: Iterable[str] | None = None
) -> ConditionCheck:
    """Check ``condition`` as a breakpoint condition at 1-based ``line`` of the module ``source``."""
    text = condition.strip()
    if len(text) > MAX_CONDITION_CHARS:
        return ConditionCheck(syntax_error=t("it is too long to check (over {0} characters)", MAX_CONDITION_CHARS))
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        return ConditionCheck(syntax_error=_statement_error(text) or exc.msg or "invalid syntax")
    except (RecursionError, MemoryError):  # Python's own compiler (debugpy's too) gives up on such nesting
        return ConditionCheck(syntax_error=t("it is nested too deeply for Python to compile"))
    effects = side_effects(tree)
    used = _names_used(tree)
    unknown = _unknown_helpers(tree, public_names)
    if not used:
        return ConditionCheck(unknown_helpers=unknown, side_effects=effects)
    defined, complete = _names_defined_at(source, line)
    if not complete:
        note = "the file cannot be analysed; names were not checked"
        return ConditionCheck(unknown_helpers=unknown, notes=(note,), side_effects=effects)
    undefined = tuple(name for name in used if name not in defined and not _is_builtin(name))
    return ConditionCheck(undefined=undefined, unknown_helpers=unknown, side_effects=effects)


def _statement_error(text: str) -> str | None:
    """Why a condition that is a statement (``x = 1``, ``del x``, ``x += 1``) is no expression; None otherwise."""
    try:
        module = ast.parse(text)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return None
    for node in module.body:
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            return t("an assignment is a statement, not an expression (it would also change the program)")
        if isinstance(node, ast.Delete):
            return t("`del` is a statement, not an expression (it would also change the program)")
    return None


def undefined_names(source: str, line: int, condition: str) -> list[str]:
    """Names ``condition`` uses that are not defined at 1-based ``line`` of ``source`` (unknown helpers included as
    ``tensorsight.<name>``); ``[]`` when the condition is fine or cannot be parsed (see ``validate_condition``)."""
    check = check_condition(source, line, condition)
    return [*check.undefined, *check.unknown_helpers]


def validate_condition(source: str, line: int, condition: str) -> dict[str, Any]:
    """The ``tensorsight/validateCondition`` answer: ``{undefinedNames, message, syntaxError, sideEffects}``
    (JSON-able)."""
    check = check_condition(source, line, condition)
    return {
        "undefinedNames": [*check.undefined, *check.unknown_helpers],
        "message": check.message(line),
        "syntaxError": check.syntax_error,
        "sideEffects": list(check.side_effects),
    }


# ---- side effects ---------------------------------------------------------------------------------------------------

MAX_CONDITION_CHARS = 100_000  # longer is refused unread (pasted by mistake)
MAX_SIDE_EFFECTS = 5  # named in the answer; the rest are summed up

# Builtins that only read their arguments (on the values a condition tests: tensors, numbers, containers).
_PURE_BUILTINS = frozenset(
    "abs all any bool callable chr complex dict divmod enumerate float format frozenset getattr hasattr hash id int "
    "isinstance issubclass iter len list map max min oct ord pow range repr reversed round set slice sorted str sum "
    "tuple type zip bin hex filter".split()
)
# Builtins that do I/O or change state.
_IO_BUILTINS = frozenset(
    "print open input exec eval compile setattr delattr __import__ exit quit breakpoint globals locals vars "
    "help".split()
)
# Methods of tensors, arrays, numbers and containers that only read (no trailing underscore: those write in place).
_PURE_METHODS = frozenset(
    "abs all allclose amax amin any argmax argmin bool clone contiguous count cpu cuda detach dim double eq equal "
    "flatten float ge get gt half is_contiguous is_floating_point isfinite isinf isnan isneginf isposinf isreal item "
    "items keys le log lt max mean median min nan_to_num nanmean nansum ne ndimension nelement norm numel numpy "
    "reshape shape size squeeze std sum t to tolist type unsqueeze values var view startswith endswith lower upper "
    "isdigit isclose count_nonzero long int sign sqrt exp square transpose permute isalpha astype copy ravel".split()
)
# Functions of torch / numpy / math modules that only read (under the usual module names).
_MODULE_NAMES = frozenset({"torch", "np", "numpy", "math", "F", "cmath", "statistics"})
_PURE_MODULE_FUNCTIONS = _PURE_METHODS | frozenset(
    "isnan isinf isfinite any all allclose equal isclose norm abs maximum minimum where count_nonzero is_tensor "
    "numel fabs sqrt exp log fsum prod mean stdev median add sub mul div matmul mm isin unique".split()
)


def side_effects(tree: ast.AST) -> tuple[str, ...]:
    """What in a parsed condition may change the program when it runs: in-place methods (a trailing underscore),
    ``out=``, ``:=``, I/O and state-changing builtins, ``yield``/``await``, and calls TensorSight cannot prove harmless
    (the ``tensorsight`` helpers, read-only builtins, tensor methods and torch/numpy/math functions are). Iterative
    (``ast.walk``): a deep expression cannot overflow the stack."""
    found: list[str] = []

    def add(text: str) -> None:
        if text not in found:
            found.append(text)

    for node in ast.walk(tree):
        if isinstance(node, ast.NamedExpr):
            add(t("`{0} := ...` assigns a variable", _short(node.target)))
        elif isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
            add(t("`{0}` suspends the frame", _short(node)))
        elif isinstance(node, ast.Call):
            if any(k.arg == "out" for k in node.keywords):
                add(t("`{0}` writes into `out=`", _short(node.func)))
            described = _call_effect(node.func)
            if described is not None:
                add(described)
    if len(found) > MAX_SIDE_EFFECTS:
        rest = len(found) - MAX_SIDE_EFFECTS
        found = [*found[:MAX_SIDE_EFFECTS], t("{0} more", rest)]
    return tuple(found)


def _call_effect(func: ast.expr) -> str | None:
    """Why calling ``func`` may change the program, or None when it is known to only read."""
    if isinstance(func, ast.Name):
        if func.id in _IO_BUILTINS:
            return t("`{0}(...)` does I/O or changes the program's state", func.id)
        if func.id in _PURE_BUILTINS:
            return None
        return t("`{0}(...)` runs code TensorSight cannot prove harmless", func.id)
    if isinstance(func, ast.Attribute):
        name = func.attr
        if name.endswith("_") and not name.endswith("__"):
            return t("`{0}(...)` writes in place", _short(func))
        receiver = func.value
        if isinstance(receiver, ast.Name) and receiver.id == BUILTIN_NAME:
            return None  # the tensorsight helpers only read (their own running state is theirs)
        if isinstance(receiver, ast.Name) and receiver.id in _MODULE_NAMES:
            if name in _PURE_MODULE_FUNCTIONS:
                return None
            return t("`{0}(...)` runs code TensorSight cannot prove harmless", _short(func))
        if name in _PURE_METHODS:
            return None
        return t("`{0}(...)` runs code TensorSight cannot prove harmless", _short(func))
    return t("`{0}(...)` runs code TensorSight cannot prove harmless", _short(func))


def _short(node: ast.AST, limit: int = 40) -> str:
    """The expression as the user wrote it, or ``....name`` for a long (or deeply nested) method chain."""
    try:
        text = ast.unparse(node)
    except (RecursionError, ValueError, AttributeError):
        text = ""
    if text and len(text) <= limit:
        return text
    if isinstance(node, ast.Attribute):
        return f"....{node.attr}"
    return text[: limit - 3] + "..." if text else type(node).__name__


def _is_builtin(name: str) -> bool:
    return name == BUILTIN_NAME or name in MODULE_DUNDERS or hasattr(builtins, name)


def _names_used(tree: ast.AST) -> list[str]:
    """Names the expression reads, minus those it binds itself (lambda parameters, comprehension targets, ``:=``)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda):
            bound.update(_parameter_names(node.args))
        elif isinstance(node, ast.comprehension):
            bound.update(_target_names(node.target))
        elif isinstance(node, ast.NamedExpr):
            bound.update(_target_names(node.target))
    used: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in bound:
            if node.id not in used:
                used.append(node.id)
    return used


def _unknown_helpers(tree: ast.AST, public_names: Iterable[str] | None) -> tuple[str, ...]:
    known = set(public_names) if public_names is not None else _public_names()
    unknown: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == BUILTIN_NAME:
            if node.attr not in known and f"{BUILTIN_NAME}.{node.attr}" not in unknown:
                unknown.append(f"{BUILTIN_NAME}.{node.attr}")
    return tuple(unknown)


def _public_names() -> set[str]:
    names = set(predicate_names()) | OTHER_PUBLIC_NAMES
    try:
        import tensorsight  # the package itself is stdlib-only at import

        names.update(getattr(tensorsight, "__all__", ()))
    except ImportError:  # pragma: no cover - core used outside the package
        pass
    return names


# ---- scope analysis -------------------------------------------------------------------------------------------------

_ScopeNode = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _names_defined_at(source: str, line: int) -> tuple[set[str], bool]:
    """Names visible to ``eval`` in a frame stopped at ``line``; the flag is False when the analysis is impossible
    (the file does not parse, or a star import hides what the module defines)."""
    try:
        module = ast.parse(source)
    except SyntaxError:
        return _names_in_text(source), True
    if any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in ast.walk(module)):
        return set(), False
    chain = _scope_chain(module, line)
    innermost = chain[-1]
    defined: set[str] = set()
    if isinstance(innermost, ast.Module):
        defined |= _bindings(innermost.body, line, innermost)
        return defined, True
    if isinstance(innermost, ast.ClassDef):
        defined |= _bindings(innermost.body, line, innermost)
        outer = chain[-2] if len(chain) > 1 else module
        if isinstance(outer, ast.Module):
            defined |= _bindings(outer.body, innermost.lineno, outer)
        else:
            defined |= _all_bindings(outer)
        return defined, True
    # a function: its own names, every module name, and the enclosing functions' names it closes over
    defined |= _parameter_names(innermost.args)
    defined |= _bindings(innermost.body, line, innermost)
    defined |= _declared(innermost, ast.Global) | _declared(innermost, ast.Nonlocal)
    defined |= _all_bindings(module)
    free = _loaded_names(innermost)
    for outer in chain[1:-1]:
        if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef)):
            outer_names = _parameter_names(outer.args) | _all_bindings(outer)
            defined |= outer_names & free
    return defined, True


def _names_in_text(source: str) -> set[str]:
    """Fallback while the file does not parse (mid-edit): any identifier written in it may be defined."""
    return {w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", source) if not keyword.iskeyword(w)}


def _scope_chain(module: ast.Module, line: int) -> list[_ScopeNode]:
    """Module, then each function/class whose body contains ``line``, outermost first."""
    chain: list[_ScopeNode] = [module]
    body: list[ast.stmt] = module.body
    while True:
        inner = _scope_containing(body, line)
        if inner is None:
            return chain
        chain.append(inner)
        body = inner.body


def _scope_containing(body: list[ast.stmt], line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None:
    for stmt in body:
        end = getattr(stmt, "end_lineno", None) or stmt.lineno
        if not stmt.lineno <= line <= end:
            continue
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            # the `def` line and decorators run in the enclosing scope; the body starts at its first statement
            if stmt.body and stmt.body[0].lineno <= line:
                return stmt
            return None
        for child_body in _child_bodies(stmt):
            found = _scope_containing(child_body, line)
            if found is not None:
                return found
    return None


def _child_bodies(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    for name in ("body", "orelse", "finalbody"):
        value = getattr(stmt, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            yield value
    for handler in getattr(stmt, "handlers", []) or []:
        yield handler.body
    for case in getattr(stmt, "cases", []) or []:
        yield case.body


def _bindings(body: list[ast.stmt], line: int, scope: ast.AST) -> set[str]:
    """Names bound in ``body`` (not descending into nested scopes) by statements that completed before ``line``, plus
    names bound anywhere in a loop that encloses ``line`` (they exist from the loop's second iteration)."""
    names: set[str] = set()
    for stmt in body:
        end = getattr(stmt, "end_lineno", None) or stmt.lineno
        if end < line:
            names |= _statement_bindings(stmt)
            continue
        if stmt.lineno > line:
            break
        # the statement contains the line: header bindings made before its body runs, then recurse into the body
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            if isinstance(stmt, (ast.For, ast.AsyncFor)) and stmt.body and stmt.body[0].lineno <= line:
                names |= _target_names(stmt.target)
            if stmt.body and stmt.body[0].lineno <= line <= (stmt.body[-1].end_lineno or stmt.lineno):
                names |= _statement_bindings(stmt)  # loop-carried names
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            if stmt.body and stmt.body[0].lineno <= line:
                for item in stmt.items:
                    if item.optional_vars is not None:
                        names |= _target_names(item.optional_vars)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            for handler in getattr(stmt, "handlers", []):
                if handler.name and handler.body and handler.body[0].lineno <= line <= (handler.end_lineno or 0):
                    names.add(handler.name)
        elif isinstance(stmt, ast.Match):
            for case in stmt.cases:
                if case.body and case.body[0].lineno <= line <= (case.body[-1].end_lineno or 0):
                    names |= _pattern_names(case.pattern)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        names |= _walrus_names_before(stmt, line)
        for child_body in _child_bodies(stmt):
            names |= _bindings(child_body, line, scope)
    return names


def _all_bindings(scope: _ScopeNode) -> set[str]:
    """Every name a scope binds, wherever (used for module names seen from functions, and closures)."""
    names: set[str] = set()
    for stmt in scope.body:
        names |= _statement_bindings(stmt)
    return names


def _statement_bindings(stmt: ast.stmt) -> set[str]:
    """Names one statement binds in its own scope, including inside its nested blocks (not nested scopes)."""
    names: set[str] = set()
    for node in _walk_same_scope(stmt):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names |= _target_names(target)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            if not isinstance(node, ast.AnnAssign) or node.value is not None:
                names |= _target_names(node.target)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            names |= _target_names(node.target)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            names |= _target_names(node.optional_vars)
        elif isinstance(node, ast.NamedExpr):
            names |= _target_names(node.target)
        elif isinstance(node, ast.match_case):
            names |= _pattern_names(node.pattern)
        elif type(node).__name__ == "TypeAlias":
            names |= _target_names(node.name)  # type: ignore[attr-defined]
    return names


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, *_COMPREHENSIONS)


def _walk_same_scope(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` that yields nested function/class/lambda/comprehension nodes but does not enter them."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node  # its name binds here; its body is another scope
        return
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if current is not node and isinstance(current, _NESTED_SCOPES):
            if isinstance(current, _COMPREHENSIONS):
                # a walrus inside a comprehension binds in the enclosing scope
                stack.extend(n for n in ast.walk(current) if isinstance(n, ast.NamedExpr))
            continue
        stack.extend(ast.iter_child_nodes(current))


def _walrus_names_before(stmt: ast.stmt, line: int) -> set[str]:
    names: set[str] = set()
    for node in _walk_same_scope(stmt):
        if isinstance(node, ast.NamedExpr) and (node.end_lineno or node.lineno) < line:
            names |= _target_names(node.target)
    return names


def _declared(scope: ast.FunctionDef | ast.AsyncFunctionDef, kind: type[ast.Global] | type[ast.Nonlocal]) -> set[str]:
    return {
        name for stmt in scope.body for node in _walk_same_scope(stmt) if isinstance(node, kind) for name in node.names
    }


def _loaded_names(scope: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(scope) if isinstance(n, ast.Name)}


def _parameter_names(args: ast.arguments) -> set[str]:
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    names = {a.arg for a in params}
    if args.vararg is not None:
        names.add(args.vararg.arg)
    if args.kwarg is not None:
        names.add(args.kwarg.arg)
    return names


def _target_names(target: ast.AST) -> set[str]:
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return {name for element in target.elts for name in _target_names(element)}
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return set()  # attribute or subscript targets bind no name


def _pattern_names(pattern: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(pattern):
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    return names


# ---- suggestions ----------------------------------------------------------------------------------------------------

KINDS = ("tensor", "scalar", "module", "optimizer", "array", "number", "sequence")

_LOSS_WORDS = ("loss", "cost", "objective", "nll", "mse", "ce", "kl", "elbo", "err", "error", "reward", "metric")
_MODULE_WORDS = ("model", "net", "module", "encoder", "decoder", "layer", "head", "backbone", "block", "mlp", "cnn")
_OPTIMIZER_WORDS = ("optimizer", "optim", "opt", "sgd", "adam", "adamw")
_PARAM_WORDS = ("weight", "bias", "param", "params", "parameters", "grad", "grads")


def guess_kind(name: str) -> str:
    """What ``name`` most likely holds, from its last dotted part: ``loss`` -> scalar, ``model.encoder`` -> module."""
    last = name.rsplit(".", 1)[-1].lower()
    words = set(re.split(r"[_\d]+", last)) | {last}
    if words & set(_OPTIMIZER_WORDS):
        return "optimizer"
    if last in ("weight", "bias", "grad") or last.endswith(("_weight", "_bias", "_grad")):
        return "tensor"
    if words & set(_LOSS_WORDS) or last in ("lr", "step", "epoch", "acc", "accuracy"):
        return "scalar"
    if words & set(_MODULE_WORDS) or last.startswith(("fc", "conv", "linear", "lin", "attn", "ln", "bn")):
        return "module"
    return "tensor"


# ---- what a condition can be about ---------------------------------------------------------------------------------


def condition_target(source: str, line: int, name: str) -> str | None:
    """The value a tensor breakpoint at 1-based ``line`` should test, given the expression ``name`` under the cursor.

    A condition is about a value (a variable, an attribute chain, a subscript), never about what the line calls: on
    ``backward`` in ``loss.backward()`` it is the receiver ``loss``; a module (``F`` of ``import ... as F``), a
    function or class defined or imported by name, and a builtin function give None. A called plain name stays when
    the file binds it as a variable (``model = Net()``, then ``model(x)``). A chain is never a call itself, so the
    condition re-runs none of the user's code."""
    expr = name.strip()
    try:
        node = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return None
    if not _is_value_expression(node):
        return None
    expr = ast.unparse(node)
    try:
        module: ast.Module | None = ast.parse(source)
    except (SyntaxError, ValueError):
        module = None
    bindings = _binding_kinds(module) if module is not None else {}
    called = _called_on_line(module, source, line, expr)
    if called and isinstance(node, ast.Attribute):
        return condition_target(source, line, ast.unparse(node.value))
    root = _root_name(node)
    if root is None:
        return None
    root_kinds = bindings.get(root, set())
    if root_kinds and root_kinds <= {"module"}:
        return None  # `torch`, `np`, `F.relu`: a module or something defined in one
    if isinstance(node, ast.Name):
        if root_kinds and root_kinds <= {"def", "class"}:
            return None
        if called and not root_kinds & {"value"}:
            return None  # `relu(x)` after `from ... import relu`, or `print(...)`: a function call
        if not root_kinds and callable(getattr(builtins, root, None)):
            return None
    return ast.unparse(node)


def _is_value_expression(node: ast.AST) -> bool:
    """A name, an attribute chain or a subscript of one, with constant or name indices: nothing that calls code."""
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.Attribute):
        return _is_value_expression(node.value)
    if isinstance(node, ast.Subscript):
        index = node.slice
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        simple = all(isinstance(p, (ast.Constant, ast.Name, ast.Slice)) for p in parts)
        return simple and _is_value_expression(node.value)
    return False


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _binding_kinds(module: ast.Module) -> dict[str, set[str]]:
    """How each name is bound anywhere in the file: ``module`` (``import x``), ``imported`` (``from m import x``),
    ``def``, ``class`` or ``value`` (assignments, parameters, loop targets...). Scope-blind: enough to tell a module
    or a function from a variable by its name."""
    kinds: dict[str, set[str]] = {}
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            for alias in node.names:
                kinds.setdefault(alias.asname or alias.name.split(".")[0], set()).add("module")
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                kinds.setdefault(alias.asname or alias.name, set()).add("imported")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kinds.setdefault(node.name, set()).add("def")
            for arg in _parameter_names(node.args):
                kinds.setdefault(arg, set()).add("value")
        elif isinstance(node, ast.ClassDef):
            kinds.setdefault(node.name, set()).add("class")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            kinds.setdefault(node.id, set()).add("value")
        elif isinstance(node, ast.Lambda):
            for arg in _parameter_names(node.args):
                kinds.setdefault(arg, set()).add("value")
    return kinds


def _called_on_line(module: ast.Module | None, source: str, line: int, expr: str) -> bool:
    """Whether ``expr`` is called on 1-based ``line`` (``expr(...)``); from the text when the file does not parse."""
    if module is not None:
        for node in ast.walk(module):
            if (
                isinstance(node, ast.Call)
                and node.func.lineno <= line <= (node.func.end_lineno or node.func.lineno)
                and ast.unparse(node.func) == expr
            ):
                return True
        return False
    lines = source.splitlines()
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return re.search(rf"(?<![\w.]){re.escape(expr)}\s*\(", text) is not None


def suggest_conditions(name: str, kind_hint: str | None = None, shape: list[int] | None = None) -> list[dict[str, str]]:
    """Conditions for the quick pick of "Add Tensor Breakpoint…", most useful first: ``[{label, condition,
    description}]``. ``kind_hint`` (one of ``KINDS``, e.g. from a value observed at run time) beats the guess from the
    name; ``shape`` (observed) pre-fills ``shape_is`` with the batch dimension left free."""
    expr = name.strip()
    kind = kind_hint if kind_hint in KINDS else guess_kind(expr)
    ts = BUILTIN_NAME
    out: list[tuple[str, str]] = []

    def add(condition: str, description: str) -> None:
        if condition not in (c for c, _ in out):
            out.append((condition, description))

    if kind in ("scalar", "number"):
        add(f"{ts}.nonfinite({expr})", t("stop when it becomes NaN or Inf"))
        add(f"{ts}.spike({expr}, 3)", t("stop when it jumps above 3× its running level"))
        add(f"{ts}.nan({expr})", t("stop when it becomes NaN"))
        add(f"{ts}.step() >= 100 and {ts}.nonfinite({expr})", t("NaN/Inf, from step 100 on"))
        add(f"{ts}.changed({expr}) is False", t("stop when it stops changing"))
    elif kind == "module":
        add(f"{ts}.nonfinite({expr})", t("stop when a parameter or gradient holds NaN/Inf"))
        add(f"{ts}.grad_norm({expr}) > 1e3", t("exploding gradients (total L2 norm above 1000)"))
        add(f"{ts}.grad_norm({expr}) < 1e-7", t("vanishing gradients (total L2 norm below 1e-7)"))
        add(f"{ts}.grad_missing({expr})", t("a trainable parameter got no gradient (detached graph, no backward)"))
        add(f"{ts}.wrong_device({expr})", t("its parameters are not all on one device"))
        add(f"not {ts}.changed({expr})", t("its parameters did not change since the last stop (frozen, lr 0)"))
    elif kind == "optimizer":
        add(f"{ts}.nonfinite({expr})", t("a parameter or gradient it updates holds NaN/Inf"))
        add(f"{ts}.grad_norm({expr}) > 1e3", t("exploding gradients in its parameter groups"))
        add(f"{ts}.grad_missing({expr})", t("one of its parameters got no gradient"))
    else:  # tensor, array, sequence
        add(f"{ts}.nonfinite({expr})", t("stop when it holds NaN or Inf"))
        add(f"{ts}.nan({expr})", t("stop when it holds NaN"))
        if shape:
            wildcard = ["None", *(str(int(d)) for d in shape[1:])] if len(shape) > 1 else [str(int(shape[0]))]
            text = "(" + ", ".join(wildcard) + ("," if len(wildcard) == 1 else "") + ")"
            add(f"not {ts}.shape_is({expr}, {text})", t("its shape is not {0}", text.replace("None", "any")))
        else:
            add(f"not {ts}.shape_is({expr}, (None, 10))", t("its shape is not (any, 10): edit the expected shape"))
        add(f"{ts}.exploding({expr}, 1e4)", t("some |value| exceeds 1e4"))
        add(f"{ts}.zero({expr})", t("it is all zeros"))
        add(f"{ts}.spike({expr}, 3)", t("its magnitude jumps above 3× its running level"))
        add(f"{ts}.wrong_device({expr}, device='cuda')", t("it is not on the GPU"))
    add(f"{ts}.on_rank(0) and {ts}.nonfinite({expr})", t("NaN/Inf, on rank 0 only (torch.distributed)"))
    return [{"label": condition, "condition": condition, "description": description} for condition, description in out]
