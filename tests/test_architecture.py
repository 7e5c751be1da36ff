"""The package's import graph keeps the process boundaries of the design: checked from the sources, and in a fresh
interpreter.

- Static tier: every module under ``pyhelpers/tensorsight`` is parsed with ``ast``; every ``import`` counts, at module
  level and inside functions (a function-level import is still an edge at run time), except those under
  ``if TYPE_CHECKING:``. The package graph has no cycle; core imports neither the agent, the server nor the CLI; the
  server imports no agent module; the agent imports neither the server, pygls nor lsprotocol.
- Runtime tier: a fresh interpreter imports every agent module (``pkgutil.walk_packages``) and finds none of pygls,
  lsprotocol, ``tensorsight.server``, torch or numpy in ``sys.modules``: the agent is a good guest in a program that
  uses neither torch nor numpy. (The pydevd plugin, outside ``tensorsight.agent``, needs pydevd and is left out.)
- Coverage of the layout: every agent module is imported by at least one test or test program.

An assertion that fails because of code another change is moving is marked ``xfail(strict=True)`` with the reason,
so it turns into a failure (to flip) the moment that code is fixed.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.paths import PYHELPERS, PYTHON, REPO

PACKAGE = "tensorsight"
PACKAGE_DIR = Path(PYHELPERS) / PACKAGE
TESTS_DIR = Path(REPO) / "tests"
FORBIDDEN_IN_AGENT = ("pygls", "lsprotocol", "tensorsight.server", "torch", "numpy")


# ---- reading the sources ---------------------------------------------------------------------------------------------


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules() -> dict[str, Path]:
    return {module_name(p, Path(PYHELPERS)): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST, type_checking: bool = False) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement in the tree, at any depth, skipping ``if TYPE_CHECKING:`` bodies unless
    ``type_checking``."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        children = list(ast.iter_child_nodes(node))
        if isinstance(node, ast.If) and _type_checking_only(node) and not type_checking:
            children = node.orelse  # type: ignore[assignment]
        stack.extend(children)


def imported_names(path: Path, name: str, known: set[str] | dict[str, Path], type_checking: bool = False) -> set[str]:
    """Fully qualified modules ``path`` imports: ``from a.b import c`` is ``a.b.c`` when that is a known module."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path)), type_checking):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:  # relative: resolved against this module's package
            anchor = name.split(".") if is_package else name.split(".")[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            child = f"{base}.{alias.name}"
            found.add(child if child in known else base)
    return found


def package_graph(type_checking: bool = False) -> dict[str, set[str]]:
    """Edges between our own modules: each points at the most specific module the import names (with
    ``type_checking``, the imports only a type checker reads count too)."""
    modules = package_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges = set()
        for target in imported_names(path, name, modules, type_checking):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


def external_imports(prefix: str) -> dict[str, set[str]]:
    """Per module under ``prefix``: every module name it imports (ours and third-party)."""
    modules = package_modules()
    return {
        name: imported_names(path, name, modules)
        for name, path in modules.items()
        if name == prefix or name.startswith(prefix + ".")
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def violations(prefix: str, forbidden: tuple[str, ...]) -> list[str]:
    return sorted(
        f"{module} imports {target}"
        for module, targets in external_imports(prefix).items()
        for target in targets
        if _within(target, forbidden)
    )


# ---- the static tier -------------------------------------------------------------------------------------------------


def test_the_reader_sees_module_and_function_level_imports(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text(
        "import os\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import typing_only\n"
        "def later():\n    from tensorsight.agent.runtime import events\n    import torch\n"
    )
    names = imported_names(source, "sample", {"tensorsight.agent.runtime.events": Path()})
    assert names == {"os", "typing", "tensorsight.agent.runtime.events", "torch"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_package_import_graph_has_no_cycle():
    graph = package_graph()
    assert len(graph) > 80 and "tensorsight.agent.runtime.events" in graph  # the walk found the package
    assert cycles(graph) == []


def test_no_cycle_hides_behind_type_checking_in_the_agent():
    """A cycle of imports that only a type checker reads is still two modules that each need the other (the
    sentinel's state, records and replay modules were one)."""
    graph = package_graph(type_checking=True)
    agent = {name: edges for name, edges in graph.items() if name.startswith("tensorsight.agent")}
    assert cycles(agent) == []


def test_no_cycle_hides_behind_type_checking_anywhere():
    """core.rules.facts types its link back to the project with a Protocol of its own (``ProjectLinks``), which
    core.rules.project implements: no module imports, even for types only, a module that builds on it."""
    assert cycles(package_graph(type_checking=True)) == []


def test_core_imports_neither_agent_server_nor_cli():
    forbidden = ("tensorsight.agent", "tensorsight.server", "tensorsight.cli", "pydevd_plugins")
    assert violations("tensorsight.core", forbidden) == []


def module_level_imports(path: Path) -> set[str]:
    """Top-level names a module imports while it is being imported (function bodies excluded)."""
    found: set[str] = set()
    stack: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"), str(path))]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        elif isinstance(node, ast.If) and _type_checking_only(node):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return found


def _core_modules_importing_torch_or_numpy_at_import() -> set[str]:
    return {
        name
        for name, path in package_modules().items()
        if _within(name, ("tensorsight.core",)) and module_level_imports(path) & {"torch", "numpy"}
    }


def test_core_imports_no_torch_or_numpy_at_import_time():
    assert sorted(_core_modules_importing_torch_or_numpy_at_import() - {"tensorsight.core.leakage"}) == []


def test_core_leakage_imports_no_numpy_at_import_time():
    assert "tensorsight.core.leakage" not in _core_modules_importing_torch_or_numpy_at_import()


def test_the_server_imports_no_agent_module():
    assert violations("tensorsight.server", ("tensorsight.agent", "pydevd_plugins")) == []


def test_the_agent_imports_neither_server_pygls_nor_lsprotocol():
    assert violations("tensorsight.agent", ("tensorsight.server", "pygls", "lsprotocol")) == []


def test_the_agent_imports_no_cli_module():
    """The headless commands (cli) use the agent, never the other way round: what runs a script for a tool that the
    agent drives (profiling) lives in agent.runtime."""
    assert violations("tensorsight.agent", ("tensorsight.cli",)) == []


# ---- the runtime tier ------------------------------------------------------------------------------------------------

_IMPORT_ALL_AGENT = """
import importlib, json, pkgutil, sys
import tensorsight.agent as agent
failed = {}
for info in pkgutil.walk_packages(agent.__path__, agent.__name__ + "."):
    try:
        importlib.import_module(info.name)
    except Exception as exc:
        failed[info.name] = repr(exc)
print(json.dumps({"modules": sorted(sys.modules), "failed": failed}))
"""


@pytest.fixture(scope="module")
def agent_imported() -> dict:
    proc = subprocess.run(
        [PYTHON, "-I", "-c", f"import sys; sys.path.insert(0, {PYHELPERS!r})\n{_IMPORT_ALL_AGENT}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_every_agent_module_imports_cleanly(agent_imported):
    assert agent_imported["failed"] == {}
    loaded = set(agent_imported["modules"])
    agent_modules = {n for n in package_modules() if _within(n, ("tensorsight.agent",))}
    assert agent_modules <= loaded, agent_modules - loaded


@pytest.mark.parametrize("forbidden", FORBIDDEN_IN_AGENT)
def test_importing_the_agent_loads_no_forbidden_module(agent_imported, forbidden):
    loaded = [m for m in agent_imported["modules"] if _within(m, (forbidden,))]
    assert loaded == []


# ---- every agent module is imported by a test ---------------------------------------------------------------------


def imported_by_tests() -> set[str]:
    """Our modules that some test (or test program) imports: directly, or through a public ``tensorsight.<name>``."""
    import tensorsight

    modules = package_modules()
    lazy: dict[str, str] = tensorsight._LAZY
    imported: set[str] = set()
    for path in TESTS_DIR.rglob("*.py"):
        targets = imported_names(path, module_name(path, TESTS_DIR), modules)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == PACKAGE:
                if node.attr in lazy:
                    targets.add(lazy[node.attr])
        for target in targets:
            while target:  # importing a module imports its packages too
                imported.add(target)
                target = target.rpartition(".")[0]
    return imported


# Agent modules that no test imports (exercised only through the doctor, a debug session or another module). Empty
# since every agent module got its own test (issue 11); it must stay empty: a new module comes with its test.
NOT_YET_IMPORTED_BY_A_TEST: frozenset[str] = frozenset()


def _agent_modules_no_test_imports() -> set[str]:
    return {n for n in package_modules() if _within(n, ("tensorsight.agent",))} - imported_by_tests()


def test_no_new_agent_module_goes_without_a_test_importing_it():
    missing = _agent_modules_no_test_imports()
    assert sorted(missing - NOT_YET_IMPORTED_BY_A_TEST) == []
    assert sorted(NOT_YET_IMPORTED_BY_A_TEST - missing) == [], "now imported by a test: drop it from the list"


def test_every_agent_module_is_imported_by_a_test():
    assert sorted(_agent_modules_no_test_imports()) == []


if __name__ == "__main__":  # pragma: no cover - a quick look at the graph by hand
    json.dump({k: sorted(v) for k, v in package_graph().items()}, sys.stdout, indent=1)
