"""Whether a module's forward can be replayed without the program noticing, and the private copy it runs on.

The replay (``replay``) runs the forward again to find the op that made a NaN/Inf. It runs on a private deep copy
of the module and of its inputs (one ``copy.deepcopy``, so what they share stays shared), under a forked RNG: every
tensor, parameter, buffer and attribute reachable from the module or its inputs (an EMA tensor updated in place, a
call counter, a list it appends to) changes in the copy only, and the program's RNG stream is untouched.

What a copy cannot contain is state reached through *names*: module globals, closure cells, builtins with effects
(``print``, ``open``) and other libraries' state (``random``, ``numpy.random``, logging). The rule, checked
statically before any replay, over every function the forward can run that is not torch's own (the ``forward`` and
the methods it names, of each module class in the tree, hooks on those modules, and the functions and classes they
reach by global name, transitively):

- no write to a global or a closure cell (``global``/``nonlocal`` assignments);
- every global or closure name it reads is a module of ``SAFE_MODULES`` (torch and its submodules, math), a class
  (whose ``__init__`` is then checked too), a function (checked in turn), a builtin other than ``UNSAFE_BUILTINS``,
  or an immutable constant (numbers, strings, dtypes, tuples of these). Anything else (a global list, a global
  tensor, numpy, a logger) could be changed or read differently by a second run;
- no hook the program registered for all modules.

When the rule fails, or the copy cannot be made, there is no replay: the sentinel stops at the module call with the
reason (``unsafe_reason``). Called by ``replay`` and ``backward``.
"""

from __future__ import annotations

import builtins
import copy
import dis
import inspect
import sys
import types
from typing import Any

from tensorsight.agent.runtime.tensor_walk import is_tensor
from tensorsight.core.l10n import current_language, t

SAFE_MODULES = ("torch", "math", "operator", "numbers", "typing")
UNSAFE_BUILTINS = frozenset(
    "print open input exec eval compile breakpoint __import__ exit quit help globals vars memoryview".split()
)
MAX_FUNCTIONS = 400  # functions inspected for one replay; beyond that we do not vouch for it
_WRITES = frozenset({"STORE_GLOBAL", "DELETE_GLOBAL", "STORE_DEREF", "DELETE_DEREF"})
_READS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})
_ATTRIBUTE_WRITES = frozenset({"STORE_ATTR", "DELETE_ATTR"})
_ATTRIBUTE_USES = frozenset({"LOAD_ATTR", "LOAD_METHOD", "COPY", "STORE_FAST", "STORE_ATTR", "DELETE_ATTR"})
_IMMUTABLE = (int, float, complex, bool, str, bytes, type(None), range, type(Ellipsis), frozenset)

_verdicts: dict[tuple[Any, bool, str], str | None] = {}  # (code, self_writes, language) -> reason (None: safe)


def _is_torch_code(obj: Any) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module == "torch" or module.startswith("torch.")


def _is_autograd_function(kind: type) -> bool:
    torch = sys.modules.get("torch")
    function = getattr(getattr(torch, "autograd", None), "Function", None)
    return function is not None and issubclass(kind, function)


def _safe_module(module: types.ModuleType) -> bool:
    name = module.__name__
    return any(name == safe or name.startswith(safe + ".") for safe in SAFE_MODULES)


class _Inspector:
    def __init__(self) -> None:
        self.seen: set[tuple[int, bool]] = set()
        self.budget = MAX_FUNCTIONS

    def value(
        self, name: str, value: Any, where: str, attribute_use: bool = False, scope: str = "global"
    ) -> str | None:
        """The reason a name read by the forward makes the replay unsafe, or None. ``attribute_use``: the code reads
        or changes an attribute of it (``Counter.calls += 1``), not just calls it or compares with it."""
        if isinstance(value, types.ModuleType):
            return None if _safe_module(value) else t("{0} uses the module {1} ({2})", where, value.__name__, name)
        if isinstance(value, _IMMUTABLE):
            return None
        if isinstance(value, tuple):
            return next((r for r in (self.value(name, v, where, attribute_use, scope) for v in value) if r), None)
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(value, (torch.dtype, torch.device)):
            return None
        if isinstance(value, type):
            if _is_torch_code(value) or value.__module__ == "builtins":
                return None
            if _is_autograd_function(value):
                return self.autograd_function(value)
            if attribute_use:
                return t(
                    "{0} uses an attribute of the class {1}, which a second run could change", where, value.__qualname__
                )
            for method in ("__init__", "__post_init__"):  # constructing one runs them on the new object
                member = value.__dict__.get(method)
                reason = self.function(member, f"{value.__qualname__}.{method}", self_writes=True)
                if reason:
                    return reason
            return None
        if isinstance(value, types.BuiltinFunctionType):
            builtin = str(getattr(value, "__name__", ""))
            if builtin in UNSAFE_BUILTINS and getattr(builtins, builtin, None) is value:
                return t("{0} calls {1}()", where, builtin)
            return None
        if inspect.isfunction(value) or inspect.ismethod(value):
            return self.function(value, name)
        if isinstance(value, (staticmethod, classmethod)):
            return self.function(value.__func__, name)
        if _is_torch_code(type(value)) and not is_tensor(value):
            return None  # torch's own callables (torch.ops namespaces, builtins wrapped by torch)
        if scope == "global":
            return t(
                "{0} reads the global {1} ({2}), which a second run could change", where, name, type(value).__name__
            )
        return t(
            "{0} reads the outer variable {1} ({2}), which a second run could change", where, name, type(value).__name__
        )

    def function(self, func: Any, label: str, self_writes: bool = False) -> str | None:
        """``self_writes``: the function may set attributes of its first argument: a method of a module class (whose
        ``self`` is the private copy) or a constructor (the new object)."""
        func = inspect.unwrap(func) if inspect.isfunction(func) else func
        if inspect.ismethod(func):
            func = func.__func__
        if not inspect.isfunction(func) or _is_torch_code(func):
            return None
        if (id(func), self_writes) in self.seen:
            return None
        self.seen.add((id(func), self_writes))
        self.budget -= 1
        if self.budget < 0:
            return t("its forward reaches more code than the sentinel can check for side effects")
        reason = self.code(func.__code__, func, label, self_writes)
        if reason is None and func.__closure__:
            for name, cell in zip(func.__code__.co_freevars, func.__closure__, strict=False):
                try:
                    content = cell.cell_contents
                except ValueError:  # an empty cell
                    continue
                if name == "__class__":
                    continue
                reason = self.value(name, content, label, attribute_use=True, scope="outer")
                if reason:
                    break
        return reason

    def code(self, code: types.CodeType, func: Any, label: str, self_writes: bool) -> str | None:
        key = (code, self_writes, current_language())  # the reason is worded in the display language
        if key in _verdicts:
            return _verdicts[key]
        reason = None
        scope = func.__globals__
        owner = code.co_varnames[0] if self_writes and code.co_argcount else None
        instructions = list(dis.get_instructions(code))
        for index, instruction in enumerate(instructions):
            name = str(instruction.argval)
            if instruction.opname in _WRITES:
                if "GLOBAL" in instruction.opname:
                    reason = t("{0} assigns the global variable {1}", label, name)
                else:
                    reason = t("{0} assigns the outer variable {1}", label, name)
            elif instruction.opname in _ATTRIBUTE_WRITES:
                target = _written_object(instructions, index)
                if owner is None or target is None or target.opname != "LOAD_FAST" or target.argval != owner:
                    reason = t("{0} sets the attribute {1} of an object outside the module", label, name)
            elif instruction.opname in _READS:
                following = instructions[index + 1].opname if index + 1 < len(instructions) else ""
                attribute_use = not (instruction.arg or 0) & 1 and following in _ATTRIBUTE_USES
                if name in scope:
                    reason = self.value(name, scope[name], label, attribute_use)
                elif name in vars(builtins):
                    reason = self.value(name, vars(builtins)[name], label, attribute_use)
            if reason:
                break
        if reason is None:
            for const in code.co_consts:  # lambdas, comprehensions, nested functions
                if isinstance(const, types.CodeType):
                    reason = self.code(const, func, label, False)
                    if reason:
                        break
        _verdicts[key] = reason
        return reason

    def autograd_function(self, kind: type) -> str | None:
        """A custom ``torch.autograd.Function`` (``Norm.apply(x)``): its class is code, not state. Its static methods
        are checked like any function; its other class attributes must be immutable constants (``eps = 1e-6``)."""
        for klass in kind.__mro__:
            if _is_torch_code(klass) or klass is object:
                continue
            for name, member in vars(klass).items():
                if isinstance(member, (staticmethod, classmethod)):
                    reason = self.function(member.__func__, f"{klass.__qualname__}.{name}")
                elif inspect.isfunction(member):
                    reason = self.function(member, f"{klass.__qualname__}.{name}")
                elif name.startswith("_") or isinstance(member, (_IMMUTABLE, tuple)):
                    reason = None  # torch's own bookkeeping (``_backward_cls``), dunders, constants
                else:
                    reason = t("{0} is a class attribute every instance shares", f"{klass.__qualname__}.{name}")
                if reason:
                    return reason
        return None

    def module_class(self, module: Any) -> str | None:
        """The methods a module's forward names, for each class of its MRO that is not torch's; and the class
        attributes it names that every instance shares (a copy of the module still reaches them)."""
        kind = type(module)
        forward = getattr(kind, "forward", None)
        if forward is None or _is_torch_code(forward):
            return None
        names = {"forward"}
        if inspect.isfunction(forward):
            names |= set(forward.__code__.co_names)
        for klass in kind.__mro__:
            if _is_torch_code(klass) or klass is object:
                continue
            for name in names:
                member = klass.__dict__.get(name)
                if member is None:
                    continue
                if isinstance(member, property):
                    member = member.fget
                if inspect.isfunction(member):
                    reason = self.function(member, f"{klass.__qualname__}.{name}", self_writes=True)
                elif isinstance(member, (staticmethod, classmethod)):
                    reason = self.function(member.__func__, f"{klass.__qualname__}.{name}")
                elif not isinstance(member, _IMMUTABLE) and not isinstance(member, tuple):
                    reason = t("{0} is a class attribute every instance shares", f"{klass.__qualname__}.{name}")
                else:
                    reason = None
                if reason:
                    return reason
        return None

    def tensor_type(self, kind: type) -> str | None:
        """A tensor subclass's ``__torch_function__`` runs for every op of the replay: it is checked too."""
        for hook in ("__torch_function__", "__torch_dispatch__"):
            member = inspect.getattr_static(kind, hook, None)
            function = getattr(member, "__func__", member)
            if inspect.isfunction(function) and not _is_torch_code(function):
                reason = self.function(function, f"{kind.__qualname__}.{hook}")
                if reason:
                    return reason
        return None


def _written_object(instructions: list[dis.Instruction], index: int) -> dis.Instruction | None:
    """The instruction that loaded the object of the attribute write at ``index`` (``x.a = v``: the load of ``x``;
    ``x.a += v``: the load before the ``COPY`` that duplicated it)."""
    before = index - 1
    if before >= 0 and instructions[before].opname == "SWAP":
        while before >= 0 and instructions[before].opname != "COPY":
            before -= 1
        before -= 1
    return instructions[before] if before >= 0 else None


def unsafe_reason(root: Any, inputs: list[Any]) -> str | None:
    """Why replaying ``root``'s forward on ``inputs`` (its tensors) could change what the program sees, or None when
    it is contained."""
    from torch.nn.modules import module as module_globals

    for hooks in ("_global_forward_pre_hooks", "_global_forward_hooks", "_global_backward_hooks"):
        for hook in getattr(module_globals, hooks, {}).values():
            owner = getattr(hook, "__module__", "") or ""
            if not owner.startswith("tensorsight."):
                return t(
                    "a hook the program registered for all modules ({0}) would run", getattr(hook, "__qualname__", hook)
                )
    inspector = _Inspector()
    for module in root.modules():
        reason = inspector.module_class(module)
        if reason:
            return reason
        for hooks in ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks"):
            for hook in getattr(module, hooks, {}).values():
                reason = inspector.value(
                    getattr(hook, "__name__", "hook"), hook, t("a hook on {0}", type(module).__name__)
                )
                if reason:
                    return reason
    torch = sys.modules["torch"]
    kinds = {type(x) for x in [*inputs, *root.parameters(), *root.buffers()]} - {torch.Tensor, torch.nn.Parameter}
    for kind in kinds:
        reason = inspector.tensor_type(kind)
        if reason:
            return reason
    return None


def function_unsafe_reason(func: Any, inputs: list[Any]) -> str | None:
    """Why calling the plain function ``func`` again on private copies of ``inputs`` (its tensors) could change what
    the program sees, or None when it is contained (the rule of this module's docstring)."""
    inspector = _Inspector()
    reason = inspector.function(func, getattr(func, "__qualname__", None) or t("the function"))
    if reason:
        return reason
    torch = sys.modules["torch"]
    for kind in {type(x) for x in inputs} - {torch.Tensor, torch.nn.Parameter}:
        reason = inspector.tensor_type(kind)
        if reason:
            return reason
    return None


def private_copy(root: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, tuple[Any, ...], dict]:
    """Deep copies of the module (None for a plain function's call, ``call_replay``) and its inputs, made together.
    Tensors that are part of the program's autograd graph (non-leaf, which ``deepcopy`` refuses) are copied detached;
    nothing of the original is written to."""
    torch = sys.modules["torch"]
    memo: dict[int, Any] = {}
    state = list(vars(root).values()) if root is not None else []
    with torch.no_grad():
        for value in _graph_tensors((args, kwargs, state)):
            memo[id(value)] = value.detach().clone()
        return copy.deepcopy((root, args, kwargs), memo)


def _graph_tensors(value: Any, depth: int = 0) -> list[Any]:
    if is_tensor(value):
        return [value] if value.grad_fn is not None else []
    if depth > 4:
        return []
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _graph_tensors(item, depth + 1)]
    return []
