"""The project around a training script: its project-local modules, for rules that follow the loop into other files.

``rules.analyze_project`` (called by the doctor and the language server) gives ``load_project`` the entry script and
a ``read(path) -> source | None`` function; nothing is imported or executed, the files are only parsed. From the
entry's ``import`` statements (absolute ones resolved against the importing file's folder, the entry's folder and
the given roots, e.g. the workspace; relative ones against the package) it follows the files that exist, breadth
first, at most ``MAX_PROJECT_FILES`` of them, each read once (so import cycles end). Well-known third-party packages
(torch, numpy, ...) are never looked up. Pure: all I/O is the caller's ``read``, which also decides what may be read
and how big.

The ``Project`` then answers what the rules ask across files: which function or method a call reaches (``engine.
train_one_epoch(...)``, ``trainer.fit()`` on ``trainer = Trainer(...)``) and where a function is called from.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from tensorsight.core.rules.facts import FunctionSummary, ModuleFacts, dotted

Reader = Callable[[str], str | None]
Function = ast.FunctionDef | ast.AsyncFunctionDef

MAX_PROJECT_FILES = 40  # modules parsed per analysis, the entry included
MAX_LOOKUPS = 400  # candidate paths tried (most do not exist), so a script with hundreds of imports stays cheap

# Third-party top-level names that are never project code: looking them up would only cost reads. Standard-library
# names are looked up: a project's own ``test.py`` or ``code.py`` next to the script shadows the standard module.
_NOT_PROJECT = frozenset(
    {
        "torch",
        "torchvision",
        "torchaudio",
        "torchtext",
        "numpy",
        "scipy",
        "pandas",
        "sklearn",
        "matplotlib",
        "tqdm",
        "transformers",
        "datasets",
        "accelerate",
        "lightning",
        "pytorch_lightning",
        "timm",
        "einops",
        "wandb",
        "tensorboard",
        "PIL",
        "cv2",
        "yaml",
        "jax",
        "tensorflow",
        "debugpy",
        "tensorsight",
    }
)


@dataclass
class ProjectModule:
    """One parsed file of the project and the project-local names its imports bind."""

    path: str
    facts: ModuleFacts
    module_names: dict[str, str] = field(default_factory=dict)  # bound name or dotted chain -> module path
    symbols: dict[str, tuple[str, str]] = field(default_factory=dict)  # bound name -> (module path, its name there)
    star_modules: list[str] = field(default_factory=list)


class Project:
    """The entry module first, then the project-local modules it reaches through imports."""

    def __init__(self, modules: list[ProjectModule]) -> None:
        self.modules = {module.path: module for module in modules}
        self._by_facts = {id(module.facts): module for module in modules}
        self._definitions: dict[str, dict[str, list[ast.AST]]] = {}
        self._called: dict[int, list[tuple[ModuleFacts, Function]]] = {}
        self._calls_by_name: dict[str, list[tuple[ModuleFacts, ast.Call]]] | None = None
        self._methods: frozenset[str] | None = None
        for module in modules:
            module.facts.project = self

    @property
    def entry(self) -> ProjectModule:
        return next(iter(self.modules.values()))

    def module_of(self, facts: ModuleFacts) -> ProjectModule | None:
        return self._by_facts.get(id(facts))

    # ----------------------------------------------------------------- symbols
    def _defined(self, path: str, name: str) -> list[ast.AST]:
        """The defs and classes named ``name`` at the top level of module ``path`` (indexed once per module)."""
        index = self._definitions.get(path)
        if index is None:
            index = {}
            module = self.modules.get(path)
            for node in module.facts.tree.body if module is not None else ():
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    index.setdefault(node.name, []).append(node)
            self._definitions[path] = index
        return index.get(name, [])

    def _top_level(self, path: str, name: str, hops: int = 2) -> Iterator[tuple[ModuleFacts, ast.AST]]:
        """What module ``path`` binds to ``name`` at top level (a def or a class), following its own imports a
        couple of hops (``from .engine import train`` re-exported by a package's ``__init__``)."""
        module = self.modules.get(path)
        if module is None:
            return
        defined = self._defined(path, name)
        if defined:
            for node in defined:
                yield module.facts, node
            return
        if hops <= 0:
            return
        imported = module.symbols.get(name)
        if imported is not None and imported[0] != path:
            yield from self._top_level(imported[0], imported[1], hops - 1)
        for star in module.star_modules:
            if star != path:
                yield from self._top_level(star, name, hops - 1)

    def resolve_name(self, facts: ModuleFacts, name: str) -> list[tuple[ModuleFacts, ast.AST]]:
        """The project def or class a bare name means in ``facts``' module: its own, else the one it imports."""
        module = self.module_of(facts)
        if module is None:
            return []
        return list(self._top_level(module.path, name))

    def resolve_callee(self, facts: ModuleFacts, func: ast.expr) -> list[tuple[ModuleFacts, ast.AST]]:
        """``f``, ``pkg.mod.f`` (through ``import pkg.mod``) or ``mod.f``: the project def/class called."""
        if isinstance(func, ast.Name):
            return self.resolve_name(facts, func.id)
        chain = dotted(func)
        module = self.module_of(facts)
        if chain is None or module is None or "." not in chain:
            return []
        head, _, attr = chain.rpartition(".")
        target = module.module_names.get(head)
        if target is None:
            return []
        return list(self._top_level(target, attr))

    def class_of_value(self, facts: ModuleFacts, value: ast.expr | None) -> tuple[ModuleFacts, ast.ClassDef] | None:
        """The project class an expression constructs: ``Trainer(...)``, ``models.Net(...).to(device)``."""
        while isinstance(value, ast.Call):
            for owner, node in self.resolve_callee(facts, value.func):
                if isinstance(node, ast.ClassDef):
                    return owner, node
            if isinstance(value.func, ast.Attribute) and value.func.attr in ("to", "cuda", "cpu", "train", "float"):
                value = value.func.value
                continue
            return None
        return None

    def methods(self, owner: ModuleFacts, cls: ast.ClassDef, name: str, depth: int = 0) -> list[Function]:
        """``cls``'s method ``name``, or its nearest project base class's (a few levels)."""
        found = [n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]
        if found or depth > 4:
            return found
        for base in cls.bases:
            for base_owner, node in self.resolve_callee(owner, base):
                if isinstance(node, ast.ClassDef) and node is not cls:
                    found.extend(self.methods(base_owner, node, name, depth + 1))
        return found

    def summaries_called(self, facts: ModuleFacts, call: ast.Call) -> list[FunctionSummary]:
        """Summaries of the project functions this call reaches (each computed by the module that defines it)."""
        return [owner.summary_of(fn) for owner, fn in self.functions_called(facts, call)]

    def functions_called(self, facts: ModuleFacts, call: ast.Call) -> list[tuple[ModuleFacts, Function]]:
        """The project functions (or methods, through ``obj = Class(...)``) a call reaches; cached per call."""
        found = self._called.get(id(call))
        if found is None:
            found = self._called[id(call)] = self._functions_called(facts, call)
        return found

    def _functions_called(self, facts: ModuleFacts, call: ast.Call) -> list[tuple[ModuleFacts, Function]]:
        func = call.func
        found: list[tuple[ModuleFacts, Function]] = []
        for owner, node in self.resolve_callee(facts, func):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((owner, node))
        if found or not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
            return found
        if func.value.id == "self" or func.attr not in self._method_names():
            return found
        # ``trainer.fit()`` where ``trainer = Trainer(...)`` in the same scope or at module level
        scope = facts.scope_of.get(call)
        where = (call.lineno, call.col_offset)
        for candidate in (scope, facts.tree):
            if not isinstance(candidate, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            bound = facts.assignments.last_before(candidate, func.value.id, where)
            if bound is None:
                continue
            located = self.class_of_value(facts, bound[1])
            if located is not None:
                owner, cls = located
                return [(owner, fn) for fn in self.methods(owner, cls, func.attr)]
            break
        return found

    def _method_names(self) -> frozenset[str]:
        """Names of the methods the project's classes define: ``x.name()`` for any other name is not project code."""
        if self._methods is None:
            self._methods = frozenset(
                node.name
                for module in self.modules.values()
                for cls in module.facts.classes
                for node in cls.body
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            )
        return self._methods

    def _calls_named(self, name: str) -> list[tuple[ModuleFacts, ast.Call]]:
        """Every call in the project of ``name(...)`` or ``x.name(...)`` (indexed once)."""
        if self._calls_by_name is None:
            index: dict[str, list[tuple[ModuleFacts, ast.Call]]] = {}
            for module in self.modules.values():
                for call in module.facts.calls:
                    func = call.func
                    called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                    if called:
                        index.setdefault(called, []).append((module.facts, call))
            self._calls_by_name = index
        return self._calls_by_name.get(name, [])

    def constructions(self, cls: ast.ClassDef) -> list[tuple[ModuleFacts, ast.Call]]:
        """Calls anywhere in the project that build ``cls`` (``Trainer(model, opt)``), for its ``__init__``'s
        arguments."""
        return [
            (facts, call)
            for facts, call in self._calls_named(cls.name)
            if any(node is cls for _, node in self.resolve_callee(facts, call.func))
        ]

    def call_sites(self, fn: Function) -> list[tuple[ModuleFacts, ast.Call]]:
        """Calls anywhere in the project that reach ``fn`` (by resolution, or by name through ``self.``)."""
        out: list[tuple[ModuleFacts, ast.Call]] = []
        for facts, call in self._calls_named(fn.name):
            if any(found is fn for _, found in self.functions_called(facts, call)):
                out.append((facts, call))
            elif any(found is fn for found in facts.local_functions(fn.name)):
                out.append((facts, call))
        return out


# --------------------------------------------------------------------------------------------------- loading
def load_project(
    entry_path: str,
    entry_facts: ModuleFacts,
    read: Reader,
    roots: Iterable[str] = (),
    max_files: int = MAX_PROJECT_FILES,
) -> Project:
    """The entry and the project files its imports reach (see the module docstring). ``read`` returns a file's
    source or None (missing, not allowed, too big); a file that does not parse is left out."""
    entry_path = os.path.normpath(entry_path)
    entry_dir = os.path.dirname(entry_path)
    search = list(dict.fromkeys([entry_dir, *(os.path.normpath(r) for r in roots)]))
    lookups: dict[str, str | None] = {}

    def lookup(path: str) -> str | None:
        if path not in lookups:
            if len(lookups) >= MAX_LOOKUPS:
                return None
            try:
                lookups[path] = read(path)
            except Exception:  # noqa: BLE001 - a reader that fails is a file we cannot see
                lookups[path] = None
        return lookups[path]

    def find(importer: str, module: str, level: int) -> str | None:
        if level:
            base = os.path.dirname(importer)
            for _ in range(level - 1):
                base = os.path.dirname(base)
            bases = [base]
        else:
            if not module or module.split(".", 1)[0] in _NOT_PROJECT:
                return None
            bases = list(dict.fromkeys([os.path.dirname(importer), *search]))
        relative = module.replace(".", os.sep) if module else ""
        for base in bases:
            if relative:
                candidates = [os.path.join(base, relative + ".py"), os.path.join(base, relative, "__init__.py")]
            else:
                candidates = [os.path.join(base, "__init__.py")]
            for candidate in candidates:
                candidate = os.path.normpath(candidate)
                if candidate == entry_path or lookup(candidate) is not None:
                    return candidate
        return None

    entry = ProjectModule(entry_path, entry_facts)
    modules = [entry]
    seen = {entry_path}
    queue = [entry]
    while queue:
        module = queue.pop(0)
        for target in _bind_imports(module, find):
            if target in seen or len(modules) >= max_files:
                continue
            seen.add(target)
            source = lookup(target)
            if source is None:
                continue
            try:
                tree = ast.parse(source, filename=target)
            except (SyntaxError, ValueError, RecursionError):
                continue
            parsed = ProjectModule(target, ModuleFacts(source, tree))
            modules.append(parsed)
            queue.append(parsed)
    return Project(modules)


def _bind_imports(module: ProjectModule, find: Callable[[str, str, int], str | None]) -> list[str]:
    """Record the project-local names ``module``'s imports bind; the module paths they name, in source order."""
    targets: list[str] = []
    for node in module.facts.all_nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                path = find(module.path, alias.name, 0)
                if path is None:
                    continue
                targets.append(path)
                if alias.asname:
                    module.module_names[alias.asname] = path
                else:
                    module.module_names[alias.name] = path
        elif isinstance(node, ast.ImportFrom):
            base = find(module.path, node.module or "", node.level)
            for alias in node.names:
                if alias.name == "*":
                    if base is not None:
                        module.star_modules.append(base)
                        targets.append(base)
                    continue
                bound = alias.asname or alias.name
                prefix = f"{node.module}.{alias.name}" if node.module else alias.name
                submodule = find(module.path, prefix, node.level)
                if submodule is not None and submodule != base:
                    module.module_names[bound] = submodule
                    targets.append(submodule)
                elif base is not None:
                    module.symbols[bound] = (base, alias.name)
            if base is not None:
                targets.append(base)
    return list(dict.fromkeys(targets))
