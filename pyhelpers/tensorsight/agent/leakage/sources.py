"""Where in the script a split's rows and its normalization statistics come from, read from the source with ``ast``.

Called by the leakage watch (``agent.leakage.watch``) when it places a finding: the line a user must fix is not
always the line that names the split. ``test_set = TensorDataset(*(a[test_rows] for a in data))`` takes its rows from
``test_rows``, so a held-out split that overlaps the training one is fixed where ``test_rows`` is drawn
(:func:`index_line`); ``train_x = (train_x - mean) / std`` is standardized with ``mean`` and ``std``, so statistics
computed over every row are fixed where they are computed (:func:`statistics_line`). Both follow the data flow
backwards through the assignments of the function that assigns the split, a few steps at most.

Reads source text only (``linecache``, ``ast``); runs nothing, touches no user object. Pure apart from a per-file
parse cache.
"""

from __future__ import annotations

import ast
import linecache

MAX_STEPS = 24  # statements visited while following the data flow backwards

# calls that compute statistics of an array (numpy/torch methods and functions, scikit-learn scalers)
STATISTIC_CALLS = frozenset(
    {
        "mean",
        "std",
        "var",
        "nanmean",
        "nanstd",
        "nanvar",
        "median",
        "quantile",
        "percentile",
        "min",
        "max",
        "amin",
        "amax",
        "fit",
        "fit_transform",
        "std_mean",
        "var_mean",
        "norm",
    }
)

_trees: dict[str, ast.Module | None] = {}


def _tree(file: str) -> ast.Module | None:
    if file not in _trees:
        try:
            _trees[file] = ast.parse("".join(linecache.getlines(file)))
        except (SyntaxError, ValueError):
            _trees[file] = None
    return _trees[file]


def _scopes(tree: ast.Module) -> list[ast.AST]:
    return [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]


def _own_statements(scope: ast.AST) -> list[ast.stmt]:
    """The assignment statements of one function (or module) body, nested functions and classes left out."""
    found: list[ast.stmt] = []
    pending = list(getattr(scope, "body", []))
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            found.append(node)
        for field in ("body", "orelse", "finalbody", "handlers"):
            pending.extend(getattr(node, field, []) or [])
    return sorted(found, key=lambda n: n.lineno)


def _targets(statement: ast.stmt) -> set[str]:
    targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
    return {n.id for target in targets if target is not None for n in ast.walk(target) if isinstance(n, ast.Name)}


def _value_for(statement: ast.stmt, name: str) -> ast.AST:
    """The part of a statement's value that flows into ``name`` (``a, b = x, y`` gives ``y`` for ``b``)."""
    value = getattr(statement, "value", None)
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(value, ast.Tuple):
        target = statement.targets[0]
        if isinstance(target, ast.Tuple) and len(target.elts) == len(value.elts):
            for element, part in zip(target.elts, value.elts, strict=True):
                if isinstance(element, ast.Name) and element.id == name:
                    return part
    assert value is not None
    return value


def _loaded_names(node: ast.AST) -> list[str]:
    names: list[str] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id not in names:
            names.append(sub.id)
    return names


def _last_assignment(statements: list[ast.stmt], name: str, before: int) -> ast.stmt | None:
    found = None
    for statement in statements:
        if statement.lineno >= before:
            break
        if name in _targets(statement):
            found = statement
    return found


def _split_statements(file: str, name: str) -> tuple[list[ast.stmt], ast.stmt] | None:
    """The assignments of the function that assigns ``name`` last, and that last assignment."""
    tree = _tree(file)
    if tree is None:
        return None
    best: tuple[list[ast.stmt], ast.stmt] | None = None
    for scope in _scopes(tree):
        statements = _own_statements(scope)
        last = _last_assignment(statements, name, 1 << 30)
        if last is not None and (best is None or last.lineno > best[1].lineno):
            best = (statements, last)
    return best


# words of a helper's name that say it computes statistics (``column_stats``, ``fit_scaler``, ``compute_moments``)
STATISTIC_WORDS = frozenset({"mean", "means", "std", "stds", "stats", "statistics", "moments", "scaler", "fit"})


def _calls(node: ast.AST) -> set[str]:
    """The names of the functions and methods ``node`` calls, with the words of each name (``column_stats`` gives
    ``column_stats``, ``column`` and ``stats``)."""
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            function = sub.func
            name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
            if isinstance(name, str):
                names.add(name)
                names.update(word for word in name.lower().split("_") if word in STATISTIC_WORDS)
    return names


def statistics_line(file: str, name: str) -> int | None:
    """The line that computes the statistics split ``name`` was standardized with: following the data flow back from
    the last assignment of ``name``, the first statement whose value calls a statistic (``.mean()``, ``.std()``,
    ``scaler.fit(...)``); None when there is none within ``MAX_STEPS`` statements."""
    found = _split_statements(file, name)
    if found is None:
        return None
    statements, start = found
    queue: list[tuple[ast.stmt, str]] = [(start, name)]
    seen: set[tuple[int, str]] = set()
    steps = 0
    while queue and steps < MAX_STEPS:
        statement, target = queue.pop(0)
        if (statement.lineno, target) in seen:
            continue
        seen.add((statement.lineno, target))
        steps += 1
        value = _value_for(statement, target)
        if _calls(value) & (STATISTIC_CALLS | STATISTIC_WORDS):
            return statement.lineno
        for loaded in _loaded_names(value):
            earlier = _last_assignment(statements, loaded, statement.lineno)
            if earlier is not None:
                queue.append((earlier, loaded))
    return None


def index_line(file: str, name: str, line: int) -> int | None:
    """The line that draws the indices split ``name`` takes its rows with: the statement at ``line`` assigns ``name``
    ``data[rows]`` (or builds it from such subscripts, ``TensorDataset(*(a[rows] for a in arrays))``) where ``rows``
    is a name assigned earlier in the same function; the line of that assignment. None when the split is not built
    by indexing with a name."""
    tree = _tree(file)
    if tree is None:
        return None
    found = next(
        (
            (statements, statement)
            for statements in map(_own_statements, _scopes(tree))
            for statement in statements
            if statement.lineno == line and name in _targets(statement)
        ),
        None,
    )
    if found is None:
        return None
    statements, start = found
    value = _value_for(start, name)
    comprehended = {
        n.id
        for generator in ast.walk(value)
        if isinstance(generator, ast.comprehension)
        for n in ast.walk(generator.target)
        if isinstance(n, ast.Name)
    }
    lines = []
    for sub in ast.walk(value):
        if isinstance(sub, ast.Subscript) and isinstance(sub.slice, ast.Name) and sub.slice.id not in comprehended:
            earlier = _last_assignment(statements, sub.slice.id, start.lineno)
            if earlier is not None:
                lines.append(earlier.lineno)
    return max(lines) if lines else None
