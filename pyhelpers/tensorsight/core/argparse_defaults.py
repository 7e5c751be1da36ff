"""Where a setting the program read from its command line was written: the ``default=`` of its ``add_argument``.

``torch.optim.Adam(model.parameters(), lr=args.lr)`` takes its learning rate from ``parser.add_argument("--lr",
type=float, default=3.0)``; when the run used that default, the number to change is on the ``add_argument`` line, not
on the optimizer's. ``default_written_at`` finds that line from the source of the call's file: the keyword's value is
``<name>.<attribute>`` (``args.lr``, ``opt.learning_rate``), an ``add_argument`` of the same file declares that
attribute (its ``dest=``, or its first long option with dashes as underscores, ``--learning-rate``), and its literal
default equals the value the run used (so ``--lr 3`` on the command line, or a value changed after parsing, gives
None). ``learning_rate_default_at`` finds it for a learning rate that reached the optimizer through other objects (a
trainer's config): the one learning-rate ``add_argument`` whose default is the value the run used. Called by
``agent.measurement.pipeline`` for the learning-rate verdicts of ``core.curves``. Pure.
"""

from __future__ import annotations

import ast
import math

from tensorsight.core.written_at import parsed


def default_written_at(source: str, call_line: int, keyword: str, value: float) -> int | None:
    """The line of the ``add_argument`` whose default ``value`` the call spanning ``call_line`` passed as
    ``keyword``, or None when the value did not come from such a default."""
    tree = parsed(source)
    if tree is None:
        return None
    attribute = _keyword_attribute(tree, call_line, keyword)
    if attribute is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_add_argument(node) and _destination(node) == attribute:
            default = _literal_default(node)
            if default is not None and math.isclose(default, value, rel_tol=1e-9, abs_tol=0.0):
                return node.lineno
    return None


def learning_rate_default_at(source: str, value: float) -> int | None:
    """The line of the one ``add_argument`` of ``source`` that declares a learning rate (its destination is ``lr``,
    ``learning_rate`` or has ``lr`` as a word: ``lr_g``, ``base_lr``) with the literal default ``value``, for a
    learning rate that reached the optimizer through other objects (``TrainerConfig(learning_rate=args.lr)``, then
    ``AdamW(groups, lr=config.learning_rate)``); None when there is none or several."""
    tree = parsed(source)
    if tree is None:
        return None
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_add_argument(node) and _names_learning_rate(_destination(node)):
            default = _literal_default(node)
            if default is not None and math.isclose(default, value, rel_tol=1e-9, abs_tol=0.0):
                lines.append(node.lineno)
    return lines[0] if len(lines) == 1 else None


def _names_learning_rate(destination: str | None) -> bool:
    if destination is None:
        return False
    words = destination.lower().split("_")
    return "lr" in words or "learning_rate" in destination.lower()


def _keyword_attribute(tree: ast.AST, call_line: int, keyword: str) -> str | None:
    """``lr`` for ``lr=args.lr`` in a call that spans ``call_line``."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.lineno <= call_line <= (node.end_lineno or node.lineno):
            continue
        for given in node.keywords:
            value = given.value
            if given.arg == keyword and isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name):
                return value.attr
    return None


def _is_add_argument(node: ast.Call) -> bool:
    return isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"


def _destination(node: ast.Call) -> str | None:
    """The attribute ``parse_args()`` sets: ``dest=``, else the first ``--long`` option, else a positional name."""
    for given in node.keywords:
        if given.arg == "dest" and isinstance(given.value, ast.Constant) and isinstance(given.value.value, str):
            return given.value.value
    names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    for name in names:
        if name.startswith("--"):
            return name[2:].replace("-", "_")
    if names and not names[0].startswith("-"):
        return names[0]
    return None


def _literal_default(node: ast.Call) -> float | None:
    for given in node.keywords:
        if given.arg != "default":
            continue
        try:
            default = ast.literal_eval(given.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
        if isinstance(default, (int, float)) and not isinstance(default, bool):
            return float(default)
        if isinstance(default, str):
            try:
                return float(default)  # ``default="3e-4"`` is parsed by ``type=float`` only when it is a string
            except ValueError:
                return None
    return None
