"""Inputs and targets that stop being pairs: a spatial augmentation applied to the input but not to its dense target,
and a split's inputs and labels reordered by two independent random permutations.

Called by the leakage watch (``agent.leakage.watch.check_scopes``) at the first optimizer step, with the training
loaders and the named split arrays it found in the user's scopes. Both checks join run-time evidence to the source:

- **Augmentation of one side.** The training loader's dataset is a custom ``Dataset`` that stores two per-sample
  arrays of the same spatial shape (an image and its segmentation mask: a dense target, read from its instance
  attributes), and its ``__getitem__`` flips, rotates, rolls or transposes one of the values it returns and never the
  other: the pair is misaligned on every augmented sample. Reported at the line that transforms the one side.
- **Two permutations.** The training split's inputs and labels (``x_train``, ``y_train``: the same number of rows)
  are each last assigned by indexing with a random draw of its own (``x = x[rng.permutation(n)]`` then
  ``y = y[rng.permutation(n)]``), or were sliced from arrays that were (``images = images[torch.randperm(n)]``, then
  ``train_x = images[n_val:]``): the two draws differ, so the labels no longer belong to their inputs. Reported at
  the labels' reordering.

Runs nothing of the user's: the source is read with ``ast``/``linecache``, attributes statically.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import os
import textwrap
from typing import Any

from tensorsight.agent.leakage.splits import MISSING, static_attribute
from tensorsight.core.l10n import t

SPATIAL_CALLS = frozenset(
    {"flip", "fliplr", "flipud", "rot90", "roll", "transpose", "hflip", "vflip", "rotate", "permute", "swapaxes"}
)
RANDOM_CALLS = frozenset({"permutation", "randperm", "choice", "sample", "permuted", "shuffle"})
MAX_SLICE_HOPS = 4  # assignments followed back from a split's array to the array it was sliced from


# ---- augmentation of one side --------------------------------------------------------------------------------------


def _dense_pairs(dataset: Any) -> bool:
    """Whether a dataset stores two per-sample arrays of one spatial shape (``[N, C, H, W]`` images and masks)."""
    try:
        stored = object.__getattribute__(dataset, "__dict__")
    except AttributeError:
        return False
    if type(stored) is not dict:
        return False
    shapes: list[tuple[int, ...]] = []
    for value in list(stored.values())[:64]:
        shape = getattr(value, "shape", None) if type(value).__module__.startswith(("torch", "numpy")) else None
        if isinstance(shape, tuple) or (shape is not None and type(shape).__name__ == "Size"):
            dims = tuple(int(d) for d in shape)
            if len(dims) >= 3:
                shapes.append(dims)
    return any(shapes.count(shape) >= 2 for shape in shapes)


def _function_tree(function: Any) -> ast.FunctionDef | None:
    code = getattr(function, "__code__", None)
    if code is None:
        return None
    lines = linecache.getlines(code.co_filename)
    first = code.co_firstlineno - 1
    if not 0 <= first < len(lines):
        return None
    block = [lines[first]]
    indent = len(lines[first]) - len(lines[first].lstrip())
    for line in lines[first + 1 : first + 200]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        block.append(line)
    try:
        tree = ast.parse(textwrap.dedent("".join(block)))
    except (SyntaxError, ValueError):
        return None
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef):
        return None
    ast.increment_lineno(node, code.co_firstlineno - 1)
    return node


def _spatial_call(node: ast.AST, name: str) -> bool:
    """Whether ``node`` applies a spatial transform to ``name`` (``name.flip(-1)``, ``torch.flip(name, ...)``,
    ``TF.hflip(name)``)."""
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Call):
            continue
        function = sub.func
        called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
        if called not in SPATIAL_CALLS:
            continue
        if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name) and function.value.id == name:
            return True
        if any(isinstance(arg, ast.Name) and arg.id == name for arg in sub.args[:1]):
            return True
    return False


def one_sided_augmentation(loader_name: str, dataset: Any) -> tuple[str, int, str, dict[str, Any]] | None:
    """``(file, line, message, details)`` when ``dataset`` holds dense input/target pairs and its ``__getitem__``
    transforms one returned value spatially and not the other (see the module docstring)."""
    if not _dense_pairs(dataset):
        return None
    function = inspect.getattr_static(type(dataset), "__getitem__", None)
    tree = _function_tree(function)
    if tree is None:
        return None
    returned: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
            returned = [e.id for e in node.value.elts if isinstance(e, ast.Name)]
    if len(returned) < 2:
        return None
    transformed: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                elements = target.elts if isinstance(target, ast.Tuple) else [target]
                for position, element in enumerate(elements):
                    if not isinstance(element, ast.Name) or element.id not in returned:
                        continue
                    value = node.value
                    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                        value = value.elts[position] if position < len(value.elts) else value
                    if _spatial_call(value, element.id):
                        transformed.setdefault(element.id, node.lineno)
    if len(transformed) != 1:
        return None
    ((moved, line),) = transformed.items()
    left = [name for name in returned if name != moved]
    file = os.path.abspath(function.__code__.co_filename)
    message = t(
        "{cls}.__getitem__ transforms `{moved}` spatially (a flip, rotation or shift) but returns `{other}` "
        "untransformed, and {cls} stores dense targets of the same shape as its inputs: every augmented sample "
        "pairs an input with a target that no longer lines up with it ({loader} trains on them); apply the same "
        "transform to `{other}` (e.g. `{moved}, {other} = {moved}.flip(-1), {other}.flip(-1)`)",
        cls=type(dataset).__name__,
        moved=moved,
        other=left[0],
        loader=loader_name,
    )
    details = {"check": "one-sided-augmentation", "transformed": moved, "untransformed": left}
    return file, line, message, details


# ---- two permutations ----------------------------------------------------------------------------------------------


def _statements(file: str) -> list[list[ast.Assign]]:
    """The assignments of each function (and of the module) of ``file``, in line order, nested bodies included."""
    try:
        tree = ast.parse("".join(linecache.getlines(file)))
    except (SyntaxError, ValueError):
        return []
    scopes: list[ast.AST] = [tree]
    scopes.extend(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    out = []
    for scope in scopes:
        found: list[ast.Assign] = []
        pending = list(getattr(scope, "body", []))
        while pending:
            node = pending.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(node, ast.Assign):
                found.append(node)
            for field in ("body", "orelse", "finalbody"):
                pending.extend(getattr(node, field, []) or [])
        out.append(sorted(found, key=lambda n: n.lineno))
    return out


def _reorder_draw(statement: ast.Assign, name: str) -> ast.AST | None:
    """The index of ``name = name[index]``, else None."""
    if len(statement.targets) != 1:
        return None
    target, value = statement.targets[0], statement.value
    if not (isinstance(target, ast.Name) and target.id == name and isinstance(value, ast.Subscript)):
        return None
    if not (isinstance(value.value, ast.Name) and value.value.id == name):
        return None
    return value.slice


def _random_draw(index: ast.AST, statements: list[ast.Assign], before: int) -> str | None:
    """A key for the random draw an index is (where the call is, or where the name it reads was drawn), or None when
    the index is no random draw (a slice, ``np.argsort(keys)``, a name assigned something else)."""
    if isinstance(index, ast.Name):
        for statement in reversed(statements):
            if statement.lineno < before and any(
                isinstance(t, ast.Name) and t.id == index.id for t in statement.targets
            ):
                return f"name:{index.id}@{statement.lineno}" if _random_draw(statement.value, [], 0) else None
        return None
    for sub in ast.walk(index):
        if isinstance(sub, ast.Call):
            function = sub.func
            called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
            if called in RANDOM_CALLS:
                return f"call@{getattr(index, 'lineno', 0)}:{getattr(index, 'col_offset', 0)}"
    return None


def _sliced_from(statements: list[ast.Assign], name: str) -> str:
    """The array ``name`` was sliced, aliased or transformed row for row from (``train_x = images[n_val:]``,
    ``x, y = a[:n], b[:n]``, ``train_x = (train_x - mean) / std``), followed back a few assignments; ``name``
    itself when it was made otherwise."""
    current, before = name, 1 << 30
    for _ in range(MAX_SLICE_HOPS):
        statement = next(
            (s for s in reversed(statements) if s.lineno < before and _assigned_value(s, current) is not None), None
        )
        if statement is None or _reorder_draw(statement, current) is not None:
            return current  # made here, or reordered here: the reorderings of ``current`` are what is compared
        value = _assigned_value(statement, current)
        source = _row_source(value) if value is not None else None
        if source is None:
            return current
        current, before = source, statement.lineno
    return current


def _row_source(value: ast.expr) -> str | None:
    """The name of the array whose rows ``value`` keeps in order: a slice of it, arithmetic with it on the left
    (``(x - mean) / std``), a method on it (``x.float()``, ``x.to(device)``), or the name itself."""
    for _ in range(MAX_SLICE_HOPS * 2):
        if isinstance(value, ast.Name):
            return value.id
        if isinstance(value, ast.Subscript) and _is_slicing(value.slice):
            value = value.value
        elif isinstance(value, ast.BinOp):
            value = value.left
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            value = value.func.value
        else:
            return None
    return None


def _assigned_value(statement: ast.Assign, name: str) -> ast.expr | None:
    """What ``statement`` assigns to ``name`` (its element of a tuple assigned to a tuple), else None."""
    if len(statement.targets) != 1:
        return None
    target, value = statement.targets[0], statement.value
    if isinstance(target, ast.Name):
        return value if target.id == name else None
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        for element, assigned in zip(target.elts, value.elts, strict=True):
            if isinstance(element, ast.Name) and element.id == name:
                return assigned
    return None


def _is_slicing(index: ast.AST) -> bool:
    """A contiguous slice (``[n_val:]``, ``[:, :3]``), as a split takes; not a gather by a drawn index."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return any(isinstance(part, ast.Slice) for part in parts) and not any(isinstance(part, ast.Call) for part in parts)


def separate_permutations(file: str, features: str, labels: str) -> tuple[int, str, dict[str, Any]] | None:
    """``(line, message, details)`` when ``features`` and ``labels`` (or the arrays they were sliced from: a split
    taken after the shuffle) are each reordered in place (``x = x[draw]``), last, by an independent random draw in one
    function of ``file`` (see the module docstring)."""
    asked = (features, labels)
    for statements in _statements(file):
        features, labels = (_sliced_from(statements, name) for name in asked)
        if features == labels:
            continue
        last: dict[str, tuple[ast.Assign, str | None]] = {}
        for statement in statements:
            for name in (features, labels):
                index = _reorder_draw(statement, name)
                if index is not None:
                    last[name] = (statement, _random_draw(index, statements, statement.lineno))
        if len(last) != 2:
            continue
        (first, draw_a), (second, draw_b) = last[features], last[labels]
        if draw_a is None or draw_b is None or draw_a == draw_b:
            continue
        message = t(
            "`{labels}` and `{features}` are reordered by two different random draws (lines {first} and {second}): "
            "each label now sits next to another sample's input, so the model learns noise; draw one permutation "
            "and index both with it (`order = rng.permutation(len({features})); {features}, {labels} = "
            "{features}[order], {labels}[order]`)",
            labels=labels,
            features=features,
            first=first.lineno,
            second=second.lineno,
        )
        return second.lineno, message, {"check": "separate-permutations", "features": features, "labels": labels}
    return None


def dataset_of(loader: Any) -> Any:
    """A loader's dataset, read statically (``MISSING`` when it has none)."""
    return static_attribute(loader, "dataset")


__all__ = ["MISSING", "dataset_of", "one_sided_augmentation", "separate_permutations"]
