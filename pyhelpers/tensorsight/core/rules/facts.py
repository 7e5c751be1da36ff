"""Facts about one Python module that every rule needs: its scopes, loops, calls, optimizers and helper functions.

Built once per ``analyze`` call (one ``ast.parse`` and a few linear walks) so that the rules stay cheap on a
3000-line file. Everything here is name-based static reasoning: it recognises how training code is written in
practice (``optimizer.step()``, ``loss.backward()``, ``model.eval()``) and prefers to know nothing over guessing.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from tensorsight.core.rules.model import Span

Scope = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef
Loop = ast.For | ast.AsyncFor | ast.While

NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
LOOP_TYPES = (ast.For, ast.AsyncFor, ast.While)

OPTIMIZER_CLASSES = frozenset(
    {
        "SGD",
        "Adam",
        "AdamW",
        "Adamax",
        "Adagrad",
        "Adadelta",
        "RMSprop",
        "Rprop",
        "LBFGS",
        "NAdam",
        "RAdam",
        "SparseAdam",
        "ASGD",
        "Lion",
        "Adafactor",
        "Lamb",
        "LAMB",
        "Muon",
    }
)
# Objects whose ``.backward(x)`` takes the graph root as an argument instead of being it.
_BACKWARD_OWNERS = re.compile(r"(accelerator|fabric|engine|autograd|^self$|^torch$)", re.IGNORECASE)
_OPTIMIZER_NAME = re.compile(r"optimi[sz]er|(^|_)opt(im)?s?(_|$|\d)|(^|_)opt[A-Z]|^opt", re.IGNORECASE)
_NOT_OPTIMIZER = re.compile(r"sched|scaler|option|adopt|warmup", re.IGNORECASE)
_MODEL_NAME = re.compile(
    r"^(model|net|network|classifier|encoder|decoder|backbone|policy|generator|discriminator|module)$"
    r"|model$|net$|^net[A-Z_]|^model_",
    re.IGNORECASE,
)
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")


def words(text: str) -> list[str]:
    """Identifier words, lower-cased: ``val_loader`` -> [val, loader], ``testDL`` -> [test, dl]."""
    return [w.lower() for w in _WORD_SPLIT.split(text) if w]


def dotted(node: ast.AST | None) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, None for anything else (calls, subscripts)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def last_name(node: ast.AST | None) -> str | None:
    """The identifier a reader would call this object: ``self.optimizers[0]`` -> ``optimizers``."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def root_name(node: ast.AST | None) -> str | None:
    """``self.model.fc`` -> ``self.model`` (so one object is one key), ``model.fc`` -> ``model``."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "self":
                return f"self.{node.attr}"
            return node.value.id
        node = node.func if isinstance(node, ast.Call) else node.value
    if isinstance(node, ast.Name):
        return node.id
    return None


def method(call: ast.Call) -> str | None:
    """The called attribute (``step`` in ``opt.step()``) or plain function name (``breakpoint``)."""
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    if isinstance(call.func, ast.Name):
        return call.func.id
    return None


def receiver(call: ast.Call) -> ast.expr | None:
    return call.func.value if isinstance(call.func, ast.Attribute) else None


def text_of(node: ast.AST) -> str:
    """Source-like text of an expression; plain names and attribute chains skip the (slow) unparser."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        chain = dotted(node)
        if chain is not None:
            return chain
    return ast.unparse(node)


def position(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def is_grad_disabling(expr: ast.expr) -> bool:
    """``torch.no_grad()``, ``@torch.inference_mode``, ``torch.set_grad_enabled(False)`` (or a non-literal mode)."""
    call = expr if isinstance(expr, ast.Call) else None
    name = last_name(call.func if call is not None else expr)
    if name in ("no_grad", "inference_mode"):
        if call is not None and call.args and isinstance(call.args[0], ast.Constant) and call.args[0].value is False:
            return False
        return True
    if name == "set_grad_enabled" and call is not None and call.args:
        mode = call.args[0]
        return not (isinstance(mode, ast.Constant) and mode.value is True)
    return False


def eval_mode_call(call: ast.Call) -> bool:
    """``m.eval()`` or ``m.train(False)``: switches a module to evaluation mode."""
    name = method(call)
    if not isinstance(call.func, ast.Attribute):
        return False
    if name == "eval" and not call.args and not call.keywords:
        return True
    if name == "train":
        mode = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "mode"), None)
        return isinstance(mode, ast.Constant) and mode.value is False
    return False


def train_mode_call(call: ast.Call) -> bool:
    """``m.train()`` / ``m.train(True)`` / ``m.train(mode=flag)``: (possibly) back to training mode."""
    if not isinstance(call.func, ast.Attribute) or call.func.attr != "train":
        return False
    mode = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "mode"), None)
    return not (isinstance(mode, ast.Constant) and mode.value is False)


def looks_like_model(node: ast.AST | None) -> bool:
    name = last_name(node)
    return bool(name and _MODEL_NAME.search(name))


@dataclass
class StepCall:
    """An optimizer step: ``opt.step()``, ``scaler.step(opt)``, ``xm.optimizer_step(opt)``."""

    call: ast.Call
    optimizer: str  # source text of the optimizer expression


@dataclass
class BackwardCall:
    call: ast.Call
    root: ast.expr | None  # the graph root (``loss`` in ``loss.backward()`` or ``accelerator.backward(loss)``)


@dataclass
class LoopFacts:
    node: Loop
    scope: Scope
    nodes: list[ast.AST]  # every node in the loop (same scope), header included
    calls: list[ast.Call]
    backwards: list[BackwardCall]
    steps: list[StepCall]


@dataclass
class FunctionSummary:
    """What a helper does when called, for rules that look through one level of calls."""

    node: ast.FunctionDef | ast.AsyncFunctionDef
    params: list[str]
    clears_grad: bool = False
    eval_receivers: list[str] = field(default_factory=list)  # expression texts switched to eval mode
    restores_train: bool = False
    grad_disabled: bool = False  # decorated with no_grad/inference_mode
    trains: bool = False  # calls backward() and an optimizer step (a training step or epoch)
    updates_by_hand: bool = False  # applies ``.grad`` to parameters itself (``p -= lr * p.grad``)


# Fields that never hold a child worth visiting (names, operators, load/store contexts, constant values).
_SCALAR_FIELDS = frozenset(
    {"id", "attr", "arg", "name", "ctx", "op", "kind", "type_comment", "level", "module", "is_async", "conversion"}
    | {"simple", "names"}
)
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}
# Leaves no rule looks up by node (their parents are what matter): not indexed, which halves the walk.
_LEAVES = frozenset({ast.Name, ast.Constant, ast.arg, ast.alias})


def _child_fields(kind: type) -> tuple[str, ...]:
    found = _CHILD_FIELDS.get(kind)
    if found is None:
        fields = getattr(kind, "_fields", ())
        found = tuple(f for f in fields if f not in _SCALAR_FIELDS and not (kind is ast.Constant and f == "value"))
        _CHILD_FIELDS[kind] = found
    return found


class ModuleFacts:
    """Parsed module plus the indexes the rules share."""

    def __init__(self, source: str, tree: ast.Module) -> None:
        self.source = source
        self.tree = tree
        self.lines = [line[:-1] if line.endswith("\r") else line for line in source.split("\n")]
        self.parents: dict[ast.AST, ast.AST] = {}
        self.scope_of: dict[ast.AST, ast.AST] = {}
        self.scopes: list[Scope] = [tree]
        self.classes: list[ast.ClassDef] = []
        self.all_nodes: list[ast.AST] = []
        self.calls: list[ast.Call] = []
        self.assigns: list[ast.Assign] = []
        self.aug_assigns: list[ast.AugAssign] = []
        self.expressions: list[ast.Expr] = []
        self._local: dict[int, list[ast.AST]] = {id(tree): []}
        self._loop_nodes: dict[int, list[ast.AST]] = {}
        self._loop_scope: dict[int, Scope] = {}
        self._index()
        self.torch_alias = self._module_alias("torch")
        self.optimizer_texts: set[str] = set()
        self.trained_roots: set[str] = set()
        self.optimized_roots: dict[str, set[str]] = {}  # optimizer text -> roots of the modules it updates
        self._find_optimizers()
        self._functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        for scope in self.scopes:
            if not isinstance(scope, ast.Module):
                self._functions.setdefault(scope.name, []).append(scope)
        self._summaries: dict[int, FunctionSummary] = {}
        self.loops: list[LoopFacts] = []
        self._loop_index: dict[ast.AST, LoopFacts] = {}
        for loop_id, nodes in self._loop_nodes.items():
            loop_node = nodes[0]
            assert isinstance(loop_node, LOOP_TYPES)
            facts = self._loop_facts(loop_node, self._loop_scope[loop_id], nodes)
            self.loops.append(facts)
            self._loop_index[loop_node] = facts
        self.loops.sort(key=lambda lf: position(lf.node))
        self.assignments = Assignments(self)
        self.backward_calls: list[BackwardCall] = [b for b in map(backward_call, self.calls) if b is not None]
        # Set by ``project.load_project`` when the module is analysed with the project's other files.
        self.project: ProjectLinks | None = None
        # Per-analysis answers a rule asks many times (keyed by the rule's own tuple), e.g. a scope's mode switches.
        self.memo: dict[tuple[object, ...], object] = {}

    # ----------------------------------------------------------------- indexing
    def _index(self) -> None:
        """One pass over the tree: parents, scopes, per-scope and per-loop node lists, calls and assignments."""
        parents, scope_of, all_nodes = self.parents, self.scope_of, self.all_nodes
        loop_nodes, local, calls, assigns = self._loop_nodes, self._local, self.calls, self.assigns
        node_type = ast.AST
        # (node, its scope, the loops around it in that scope, whether it counts among the scope's own nodes)
        stack: list[tuple[ast.AST, ast.AST, tuple[ast.AST, ...], bool]] = [
            (child, self.tree, (), True) for child in reversed(self.tree.body)
        ]
        for statement in self.tree.body:
            parents[statement] = self.tree
        while stack:
            node, scope, loops, counted = stack.pop()
            all_nodes.append(node)
            scope_of[node] = scope
            if counted:
                local[id(scope)].append(node)
            for loop in loops:
                loop_nodes[id(loop)].append(node)
            kind = type(node)
            if kind is ast.Call:
                calls.append(node)  # type: ignore[arg-type]
            elif kind is ast.Assign:
                assigns.append(node)  # type: ignore[arg-type]
            elif kind is ast.Expr:
                self.expressions.append(node)  # type: ignore[arg-type]
            elif kind is ast.AugAssign:
                self.aug_assigns.append(node)  # type: ignore[arg-type]
            inner_scope, inner_loops, inner_counted = scope, loops, counted
            if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                self.scopes.append(node)  # type: ignore[arg-type]
                local[id(node)] = []
                inner_scope, inner_loops, inner_counted = node, (), True
            elif kind is ast.ClassDef or kind is ast.Lambda:
                if kind is ast.ClassDef:
                    self.classes.append(node)  # type: ignore[arg-type]
                inner_scope, inner_loops, inner_counted = node, (), False
            elif kind is ast.For or kind is ast.While or kind is ast.AsyncFor:
                loop_nodes[id(node)] = [node]
                self._loop_scope[id(node)] = scope  # type: ignore[assignment]
                inner_loops = (*loops, node)
            children: list[ast.AST] = []
            for name in _child_fields(kind):
                value = getattr(node, name, None)
                if value is None:
                    continue
                if type(value) is list:
                    children.extend(item for item in value if isinstance(item, node_type) and type(item) not in _LEAVES)
                elif isinstance(value, node_type) and type(value) not in _LEAVES:
                    children.append(value)
            for child in reversed(children):  # source order when popped
                parents[child] = node
                stack.append((child, inner_scope, inner_loops, inner_counted))

    def local_nodes(self, scope: ast.AST) -> list[ast.AST]:
        """Nodes that run in ``scope`` itself (a module or function), not in nested functions or classes."""
        return self._local.get(id(scope), [])

    def _module_alias(self, module: str) -> str | None:
        for node in self.all_nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == module:
                        return alias.asname or module
        return None

    def _find_optimizers(self) -> None:
        for call in self.calls:  # ``train(model, torch.optim.SGD(model.parameters(), lr=0.1))``: trained too
            if is_optimizer_constructor(call) and not isinstance(self.parents.get(call), ast.Assign):
                for inner in ast.walk(call):
                    if isinstance(inner, ast.Call) and method(inner) in ("parameters", "named_parameters"):
                        root = root_name(receiver(inner))
                        if root:
                            self.trained_roots.add(root)
        for node in self.assigns:
            if not isinstance(node.value, ast.Call):
                continue
            if not is_optimizer_constructor(node.value):
                continue
            roots: set[str] = set()
            for inner in ast.walk(node.value):
                if isinstance(inner, ast.Call) and method(inner) in ("parameters", "named_parameters"):
                    root = root_name(receiver(inner))
                    if root:
                        roots.add(root)
            self.trained_roots |= roots
            for target in node.targets:
                self.optimizer_texts.add(text_of(target))
                self.optimized_roots.setdefault(text_of(target), set()).update(roots)

    def _summarize(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> FunctionSummary:
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)]
        summary = FunctionSummary(node=fn, params=params)
        summary.grad_disabled = any(is_grad_disabling(d) for d in fn.decorator_list)
        backward = step = False
        for node in self.local_nodes(fn):
            if isinstance(node, ast.Call):
                backward = backward or backward_call(node) is not None
                step = step or self.step_call(node) is not None
            if is_grad_clearing(node):
                summary.clears_grad = True
            if manual_update(node):
                summary.updates_by_hand = True
            if isinstance(node, ast.Call):
                if eval_mode_call(node):
                    recv = receiver(node)
                    if recv is not None:
                        summary.eval_receivers.append(text_of(recv))
                elif train_mode_call(node):
                    summary.restores_train = True
        summary.trains = backward and step
        return summary

    def _loop_facts(self, loop: Loop, scope: Scope, nodes: list[ast.AST]) -> LoopFacts:
        calls = [n for n in nodes if isinstance(n, ast.Call)]
        calls.sort(key=position)
        backwards = [b for b in (backward_call(c) for c in calls) if b is not None]
        steps = [s for s in (self.step_call(c) for c in calls) if s is not None]
        return LoopFacts(loop, scope, nodes, calls, backwards, steps)

    # ----------------------------------------------------------------- queries
    def loop_facts(self, loop: ast.AST) -> LoopFacts:
        return self._loop_index[loop]

    def is_optimizer(self, node: ast.AST | None) -> bool:
        if node is None:
            return False
        if text_of(node) in self.optimizer_texts:
            return True
        name = last_name(node)
        return bool(name and _OPTIMIZER_NAME.search(name) and not _NOT_OPTIMIZER.search(name))

    def is_optimizer_text(self, text: str) -> bool:
        if text in self.optimizer_texts:
            return True
        name = text.rsplit(".", 1)[-1].split("[", 1)[0]
        return bool(_OPTIMIZER_NAME.search(name) and not _NOT_OPTIMIZER.search(name))

    def step_call(self, call: ast.Call) -> StepCall | None:
        name = method(call)
        recv = receiver(call)
        if name == "step" and recv is not None:
            recv_name = (last_name(recv) or "").lower()
            if "scaler" in recv_name and call.args:
                return StepCall(call, text_of(call.args[0]))
            if self.is_optimizer(recv):
                return StepCall(call, text_of(recv))
        if name == "optimizer_step" and call.args:
            return StepCall(call, text_of(call.args[0]))
        return None

    def helpers_called(self, call: ast.Call) -> list[FunctionSummary]:
        """Summaries of the functions this call may reach: the module's own (``f(...)`` or ``self.f(...)``) and,
        analysed with its project, the other modules' (``engine.train_one_epoch(...)``, ``trainer.fit()``)."""
        func = call.func
        found: list[FunctionSummary] = []
        if isinstance(func, ast.Name):
            found = self._summaries_of(func.id)
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            found = self._summaries_of(func.attr)
        if self.project is not None and not found:
            found = self.project.summaries_called(self, call)
        return found

    def summary_of(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> FunctionSummary:
        summary = self._summaries.get(id(fn))
        if summary is None:
            summary = self._summaries[id(fn)] = self._summarize(fn)
        return summary

    def local_functions(self, name: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        """The module's functions and methods of that name (any class: ``self.f`` is resolved by name)."""
        return list(self._functions.get(name, ()))

    def defines_function(self, name: str) -> bool:
        return name in self._functions

    def _summaries_of(self, name: str) -> list[FunctionSummary]:
        """Summaries are computed on first use: most functions are never called from a loop a rule looks at."""
        return [self.summary_of(fn) for fn in self._functions.get(name, ())]

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        current = self.parents.get(node)
        while current is not None:
            yield current
            current = self.parents.get(current)

    def enclosing_loops(self, node: ast.AST) -> list[Loop]:
        """Loops around ``node`` in its own scope, innermost first."""
        found: list[Loop] = []
        for parent in self.ancestors(node):
            if isinstance(parent, NESTED_SCOPES):
                break
            if isinstance(parent, LOOP_TYPES) and node_in_loop_body(parent, node, self):
                found.append(parent)
        return found

    def enclosing_function(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        scope = self.scope_of.get(node)
        return scope if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else None

    def statement_of(self, node: ast.AST) -> ast.stmt:
        current: ast.AST = node
        while not isinstance(current, ast.stmt):
            current = self.parents[current]
        return current

    def block_of(self, stmt: ast.stmt) -> tuple[list[ast.stmt], int] | None:
        """The statement list holding ``stmt`` and its index there."""
        parent = self.parents.get(stmt)
        if parent is None:
            return None
        for field_name in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(parent, field_name, None)
            if isinstance(block, list) and stmt in block:
                return block, block.index(stmt)
        return None

    def under_grad_disabled(self, node: ast.AST) -> bool:
        """Inside ``with torch.no_grad():`` (or alike) or a function decorated with it, in this module."""
        for parent in self.ancestors(node):
            if isinstance(parent, (ast.With, ast.AsyncWith)):
                if any(is_grad_disabling(item.context_expr) for item in parent.items):
                    return True
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(is_grad_disabling(d) for d in parent.decorator_list):
                    return True
        return False

    def scope_nodes(self, scope: ast.AST) -> list[ast.AST]:
        return self.local_nodes(scope)

    # ----------------------------------------------------------------- positions
    def char_col(self, line: int, byte_col: int) -> int:
        """ast columns are UTF-8 byte offsets; edits and ranges use characters."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))

    def span(self, node: ast.AST) -> Span:
        line = getattr(node, "lineno", 1)
        end_line = getattr(node, "end_lineno", None) or line
        col = self.char_col(line, getattr(node, "col_offset", 0))
        end_col = self.char_col(end_line, getattr(node, "end_col_offset", None) or 0)
        return Span(line, col, end_line, end_col)

    def header_span(self, node: ast.AST) -> Span:
        """One-line span: a loop's or def's header line, from its first character to the line's end."""
        line = getattr(node, "lineno", 1)
        col = self.char_col(line, getattr(node, "col_offset", 0))
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return Span(line, col, line, len(text.rstrip()))

    def indent_of(self, line: int) -> str:
        text = self.lines[line - 1]
        return text[: len(text) - len(text.lstrip())]


def node_in_loop_body(loop: Loop, node: ast.AST, facts: ModuleFacts) -> bool:
    """True when ``node`` runs once per iteration (body or while-test), not in the ``for`` target/iterable."""
    current: ast.AST = node
    for parent in facts.ancestors(node):
        if parent is loop:
            if isinstance(loop, ast.While):
                return True
            return current is not loop.iter and current is not loop.target
        current = parent
    return False


def is_optimizer_constructor(call: ast.Call) -> bool:
    name = dotted(call.func) or ""
    last = name.rsplit(".", 1)[-1]
    if last in OPTIMIZER_CLASSES:
        return True
    if name.startswith(("optim.", "torch.optim.")) and last[:1].isupper():
        return True
    return "optimizer" in last.lower() and "scheduler" not in last.lower()


def backward_call(call: ast.Call) -> BackwardCall | None:
    name = method(call)
    if name not in ("backward", "manual_backward"):
        return None
    recv = receiver(call)
    if name == "manual_backward" or recv is None:
        return BackwardCall(call, call.args[0] if call.args else None)
    owner = dotted(recv) or ""
    if call.args and _BACKWARD_OWNERS.search(owner.rsplit(".", 1)[-1] if owner else ""):
        return BackwardCall(call, call.args[0])
    if isinstance(recv, ast.Call) and method(recv) == "scale" and recv.args:
        return BackwardCall(call, recv.args[0])  # scaler.scale(loss).backward()
    return BackwardCall(call, recv)


_GRAD_TEXT = re.compile(r"\.grad(\.|\[|$)")
_CLEAR_METHODS = frozenset({"zero_", "fill_", "mul_", "detach_", "copy_"})


def is_grad_clearing(node: ast.AST) -> bool:
    """``x.zero_grad(...)``, a reference to ``.zero_grad``, ``p.grad = None``, ``p.grad.zero_()``, ``del p.grad``."""
    kind = type(node)
    if kind is ast.Attribute:
        return node.attr in ("zero_grad", "clear_grad", "clear_gradients")  # type: ignore[attr-defined]
    if kind is ast.Assign or kind is ast.Delete:
        targets = node.targets  # type: ignore[attr-defined]
        return any(isinstance(t, ast.Attribute) and t.attr == "grad" for t in targets)
    if kind is ast.Call:
        assert isinstance(node, ast.Call)
        recv = receiver(node)
        return method(node) in _CLEAR_METHODS and recv is not None and bool(_GRAD_TEXT.search(text_of(recv)))
    return False


_UPDATE_METHODS = frozenset({"sub_", "add_", "addcdiv_", "addcmul_"})


def manual_update(node: ast.AST) -> bool:
    """A hand-written optimizer step that applies a gradient: ``p -= lr * p.grad``, ``p.data.sub_(lr * p.grad)``,
    ``p.data.add_(p.grad, alpha=-lr)``, ``w.data = w.data - lr * w.grad``."""
    kind = type(node)
    if kind is ast.AugAssign:
        assert isinstance(node, ast.AugAssign)
        return isinstance(node.op, ast.Sub) and _mentions_grad(node.value)
    if kind is ast.Call:
        assert isinstance(node, ast.Call)
        name = method(node)
        if name not in _UPDATE_METHODS or receiver(node) is None:
            return False
        if name != "sub_" and not _negated(node):
            return False  # ``norm.add_(p.grad.norm())`` sums, ``p.add_(p.grad, alpha=-lr)`` descends
        return any(_mentions_grad(a) for a in [*node.args, *(k.value for k in node.keywords)])
    if kind is ast.Assign:
        assert isinstance(node, ast.Assign)
        return (
            len(node.targets) == 1
            and isinstance(node.value, ast.BinOp)
            and text_of(node.targets[0]) in {text_of(node.value.left)}
            and _mentions_grad(node.value.right)
        )
    return False


def _negated(call: ast.Call) -> bool:
    if any(k.arg in ("alpha", "value") for k in call.keywords):
        return True
    return any(isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) for a in call.args for n in ast.walk(a))


def _mentions_grad(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "grad" for n in ast.walk(node))


def names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


class Assignments:
    """Per scope: name -> [(position, assigned value or None for tuple/loop targets)], in source order."""

    def __init__(self, facts: ModuleFacts) -> None:
        self._facts = facts
        self._cache: dict[int, dict[str, list[tuple[tuple[int, int], ast.AST, ast.expr | None]]]] = {}

    def of(self, scope: Scope) -> dict[str, list[tuple[tuple[int, int], ast.AST, ast.expr | None]]]:
        key = id(scope)
        if key not in self._cache:
            table: dict[str, list[tuple[tuple[int, int], ast.AST, ast.expr | None]]] = {}
            for node in self._facts.local_nodes(scope):
                if type(node) not in _BINDING_TYPES:
                    continue
                for name, value in _bindings(node):
                    table.setdefault(name, []).append((position(node), node, value))
            for entries in table.values():
                entries.sort(key=lambda e: e[0])
            self._cache[key] = table
        return self._cache[key]

    def last_before(self, scope: Scope, name: str, where: tuple[int, int]) -> tuple[ast.AST, ast.expr | None] | None:
        found = None
        for pos, node, value in self.of(scope).get(name, []):
            if pos >= where:
                break
            found = (node, value)
        return found


_BINDING_TYPES = frozenset(
    {ast.Assign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension, ast.With, ast.AsyncWith}
)


def _bindings(node: ast.AST) -> Iterator[tuple[str, ast.expr | None]]:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, (ast.Name, ast.Attribute)):
                yield text_of(target), node.value
            elif isinstance(target, (ast.Tuple, ast.List)):
                for inner in ast.walk(target):
                    if isinstance(inner, (ast.Name, ast.Attribute)) and not isinstance(inner.ctx, ast.Load):
                        yield text_of(inner), None
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        yield text_of(node.target), node.value
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        for inner in ast.walk(node.target):
            if isinstance(inner, ast.Name):
                yield inner.id, None
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:
            if isinstance(item.optional_vars, ast.Name):
                yield item.optional_vars.id, None


# ---------------------------------------------------------------------------------------------- the project link
# What a module's facts may ask of the project they were analysed with (``ModuleFacts.project``). ``project.Project``
# (which builds on these facts) implements it; it is declared here so that facts need nothing of project.
Function = ast.FunctionDef | ast.AsyncFunctionDef


class ProjectFile(Protocol):
    """One file of the project (``project.ProjectModule``)."""

    @property
    def path(self) -> str: ...

    @property
    def facts(self) -> ModuleFacts: ...


class ProjectLinks(Protocol):
    """The project a module belongs to, as the rules ask it (``project.Project``)."""

    @property
    def modules(self) -> Mapping[str, ProjectFile]: ...

    @property
    def entry(self) -> ProjectFile: ...

    def module_of(self, facts: ModuleFacts) -> ProjectFile | None: ...

    def resolve_callee(self, facts: ModuleFacts, func: ast.expr) -> list[tuple[ModuleFacts, ast.AST]]: ...

    def class_of_value(self, facts: ModuleFacts, value: ast.expr | None) -> tuple[ModuleFacts, ast.ClassDef] | None: ...

    def methods(self, owner: ModuleFacts, cls: ast.ClassDef, name: str, depth: int = 0) -> list[Function]: ...

    def summaries_called(self, facts: ModuleFacts, call: ast.Call) -> list[FunctionSummary]: ...

    def functions_called(self, facts: ModuleFacts, call: ast.Call) -> list[tuple[ModuleFacts, Function]]: ...

    def constructions(self, cls: ast.ClassDef) -> list[tuple[ModuleFacts, ast.Call]]: ...

    def call_sites(self, fn: Function) -> list[tuple[ModuleFacts, ast.Call]]: ...
