"""Test tiers read from what each test really uses; tests/conftest.py turns them into pytest markers.

Each test is put in the tiers of the real components it drives, so a new test lands in the right tier without anyone
remembering to mark it:

- ``dap``: a real ``python -m debugpy.adapter`` session (tests/support/dap.py, dap_multi.py);
- ``lsp``: a real pygls server over stdio (pytest-lsp, tests/support/lsp.py);
- ``subprocess``: a child Python process (the doctor, a debuggee, a fresh interpreter).

A test's tiers come from the imports it reaches: the names its body (and its class's, for a method) uses, followed
through the module's own functions, classes, constants and fixtures (the fixtures it asks for and the module's
autouse ones), to the imports they name, module-level or inside a function. So a module that holds both pure unit
tests and debug-session tests puts only the latter in ``dap``. ``pytest -m "not dap and not subprocess"`` is the fast
inner loop; the e2e tier is the TypeScript suite.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

TIER_IMPORTS = {
    "dap": ("support.dap", "support.dap_multi"),
    "lsp": ("pytest_lsp", "support.lsp"),
    "subprocess": ("subprocess", "support.dap", "support.dap_multi", "pytest_lsp", "support.lsp"),
}


def tiers_of(source: str) -> set[str]:
    """The tiers of a whole test module: those of every module it imports (module level or inside functions)."""
    return _tiers_of_modules(_imported_modules(ast.parse(source)))


def tiers_by_test(source: str) -> dict[str, set[str]]:
    """Each top-level test function's or test class's tiers, by name, from the imports it reaches."""
    tree = ast.parse(source)
    definitions = _module_definitions(tree)
    bindings = _import_bindings(tree)
    autouse = [name for name, node in definitions.items() if _is_autouse_fixture(node)]
    tiers: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name.startswith(
            ("test", "Test")
        ):
            reached = _reached_definitions([node, *(definitions[name] for name in autouse)], definitions)
            modules = set().union(*(_imported_modules(part) for part in reached))
            for name in set().union(*(_names_used(part) for part in reached)):
                modules |= bindings.get(name, set())
            tiers[node.name] = _tiers_of_modules(modules)
    return tiers


def _tiers_of_modules(modules: set[str]) -> set[str]:
    return {tier for tier, names in TIER_IMPORTS.items() if modules.intersection(names)}


def _imported_modules(tree: ast.AST) -> set[str]:
    """Every module (and ``module.name``) an import inside `tree` names."""
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
    return imported


def _import_bindings(tree: ast.Module) -> dict[str, set[str]]:
    """The modules each module-level imported name stands for (``DebugSession`` -> support.dap and its member)."""
    bindings: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                bindings.setdefault(alias.asname or alias.name.split(".")[0], set()).add(alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                bound = bindings.setdefault(alias.asname or alias.name, set())
                bound.update((node.module, f"{node.module}.{alias.name}"))
    return bindings


def _module_definitions(tree: ast.Module) -> dict[str, ast.AST]:
    """The module's own functions, classes and assigned names (a constant built from an import counts too)."""
    definitions: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            definitions[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        definitions[name.id] = node
    return definitions


def _reached_definitions(roots: Iterable[ast.AST], definitions: dict[str, ast.AST]) -> list[ast.AST]:
    """`roots` and every module definition they name (calls, constants, fixtures asked for), transitively."""
    reached: list[ast.AST] = []
    seen: set[int] = set()
    pending = list(roots)
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        reached.append(node)
        pending.extend(definitions[name] for name in _names_used(node) if name in definitions)
    return reached


def _names_used(node: ast.AST) -> set[str]:
    """Names read in `node`, and the parameters of its functions (pytest fixtures are asked for by name)."""
    names = {child.id for child in ast.walk(node) if isinstance(child, ast.Name)}
    for child in ast.walk(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.update(arg.arg for arg in (*child.args.posonlyargs, *child.args.args, *child.args.kwonlyargs))
    return names


def _is_autouse_fixture(node: ast.AST) -> bool:
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Call) and any(
            keyword.arg == "autouse" and isinstance(keyword.value, ast.Constant) and keyword.value.value is True
            for keyword in decorator.keywords
        ):
            return True
    return False
