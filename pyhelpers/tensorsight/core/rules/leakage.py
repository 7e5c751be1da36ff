"""Rule TS106: normalisation statistics that see the evaluation data (normalisation leakage).

A scaler fitted on the whole dataset before the train/test split, or fitted on the test/validation data, lets the
evaluation data shape the training features: the reported score is optimistic and no error says so. Covers the
scikit-learn scalers (``StandardScaler().fit_transform(X)`` then ``train_test_split(X_scaled, ...)``) and the
hand-written form (``mean = X.mean(0)`` or ``m, s = X.mean(0), X.std(0)``; ``X = (X - mean) / std``; then
``random_split``, ``train_test_split`` or held-out rows sliced or indexed out: ``X_train, X_test = X[:n], X[n:]``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tensorsight.core.findings import Finding
from tensorsight.core.l10n import t
from tensorsight.core.rules.facts import (
    ModuleFacts,
    Scope,
    last_name,
    method,
    names_in,
    position,
    receiver,
    text_of,
    words,
)
from tensorsight.core.rules.model import RuleInfo

NORMALISATION_LEAKAGE = RuleInfo(
    "TS106",
    "normalisation-leakage",
    "leakage",
    "warning",
    "normalisation statistics are computed on data that includes the evaluation split: evaluation data leaks into "
    "training and the score is optimistic; split first, then fit on the training part only",
)

SCALERS = frozenset(
    {"StandardScaler", "MinMaxScaler", "RobustScaler", "MaxAbsScaler", "QuantileTransformer", "PowerTransformer"}
)
SPLITTERS = frozenset({"train_test_split", "random_split"})
HELD_OUT_WORDS = frozenset({"test", "val", "valid", "validation", "holdout", "dev", "eval"})
STAT_METHODS = frozenset({"mean", "std", "var", "min", "max", "amin", "amax", "nanmean", "nanstd"})


def check(facts: ModuleFacts, path: str) -> Iterator[Finding]:
    scalers = _scaler_texts(facts)
    for scope in facts.scopes:
        nodes = facts.local_nodes(scope)
        splits = [n for n in nodes if isinstance(n, ast.Call) and _is_split(facts, scope, n)]
        for node in nodes:
            if isinstance(node, ast.Call):
                finding = _scaler_fit(facts, path, node, scalers, splits)
                if finding is not None:
                    yield finding
        yield from _manual_statistics(facts, path, scope, nodes, splits)


def _scaler_texts(facts: ModuleFacts) -> set[str]:
    found: set[str] = set()
    for node in facts.assigns:
        if isinstance(node.value, ast.Call):
            if last_name(node.value.func) in SCALERS:
                found.update(text_of(t) for t in node.targets if isinstance(t, (ast.Name, ast.Attribute)))
    return found


def _is_split(facts: ModuleFacts, scope: Scope, call: ast.Call) -> bool:
    name = last_name(call.func)
    if name in SPLITTERS:
        return True
    if name == "split" and isinstance(call.func, ast.Attribute):
        splitter = call.func.value
        if isinstance(splitter, ast.Call):
            return _is_splitter_class(last_name(splitter.func))
        if isinstance(splitter, ast.Name):
            found = facts.assignments.last_before(scope, splitter.id, position(call))
            return bool(found and isinstance(found[1], ast.Call) and _is_splitter_class(last_name(found[1].func)))
    return False


def _is_splitter_class(name: str | None) -> bool:
    return bool(name) and (name.endswith("Fold") or name.endswith("Split"))  # type: ignore[union-attr]


def _scaler_fit(
    facts: ModuleFacts, path: str, call: ast.Call, scalers: set[str], splits: list[ast.Call]
) -> Finding | None:
    if method(call) not in ("fit", "fit_transform") or not call.args:
        return None
    recv = receiver(call)
    if recv is None:
        return None
    is_scaler = text_of(recv) in scalers or (isinstance(recv, ast.Call) and last_name(recv.func) in SCALERS)
    if not is_scaler:
        return None
    data = call.args[0]
    data_text = text_of(data)
    data_words = set(words(data_text))
    if HELD_OUT_WORDS & data_words and "train" not in data_words:
        message = t(
            "the scaler is fitted on {0}: the held-out data sets the normalisation, so evaluation is no "
            "longer blind; fit on the training split and only transform {0}",
            data_text,
        )
        return NORMALISATION_LEAKAGE.finding(path, facts.span(call), message)
    produced = _produced_names(facts, call)
    tracked = names_in(data) | produced
    for split in splits:
        if position(split) > position(call) and tracked & names_in(split):
            message = t(
                "the scaler is fitted on {0} before the split on line {1}: test rows shape the "
                "normalisation of the training data; split first, then fit on the training part only",
                data_text,
                split.lineno,
            )
            return NORMALISATION_LEAKAGE.finding(path, facts.span(call), message)
    return None


def _produced_names(facts: ModuleFacts, call: ast.Call) -> set[str]:
    """Names bound from the call's result (``X_scaled = scaler.fit_transform(X)``)."""
    stmt = facts.statement_of(call)
    if isinstance(stmt, ast.Assign) and stmt.value is call:
        return {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _manual_statistics(
    facts: ModuleFacts, path: str, scope: Scope, nodes: list[ast.AST], splits: list[ast.Call]
) -> Iterator[Finding]:
    """``m = X.mean(0)`` (or ``m, s = X.mean(0), X.std(0)``, or inline) ... ``Z = (X - m) / s`` ... then a split of
    ``Z``: ``random_split(Z...)`` / ``train_test_split(Z...)``, or held-out rows indexed out of it (``X_train,
    X_test = Z[:n], Z[n:]``, ``x_val = Z[val_idx]``). Also statistics of the held-out data itself (``m =
    X_test.mean(0)``) used to normalise anything."""
    assigns = sorted((n for n in nodes if isinstance(n, ast.Assign)), key=position)
    held_out = [(pos, base) for node in assigns for pos, base in _held_out_rows(node)]
    stats: dict[str, tuple[str, ast.expr]] = {}  # stat name -> (data name, the statistic's expression)
    reported: set[int] = set()
    held_out_reported: set[str] = set()
    for node in assigns:
        pairs = _pairs(node)
        found_stat = False
        for name, value in pairs:
            source = _statistic_of(value)
            if source is not None:
                stats[name] = (source, value)
                found_stat = True
        if found_stat:
            continue
        for normalised, value in pairs:
            if not isinstance(value, ast.BinOp):
                continue
            used = names_in(value)
            named = [(n, d, v) for n, (d, v) in stats.items() if n in used]
            inline = [c for c in ast.walk(value) if isinstance(c, ast.Call)]
            named += [(text_of(c), d, c) for c in inline if (d := _statistic_of(c)) is not None]
            for stat_name, data_name, stat_value in named:
                if _held_out(data_name) and data_name not in held_out_reported:
                    held_out_reported.add(data_name)  # once per held-out set: its mean and std are one mistake
                    message = t(
                        "{stat} is computed on {data} and normalises {target}: the held-out data sets the "
                        "normalisation, so evaluation is no longer blind; compute it on the training split and "
                        "apply it to {data}",
                        stat=stat_name,
                        data=data_name,
                        target=normalised,
                    )
                    yield NORMALISATION_LEAKAGE.finding(path, facts.span(stat_value), message)
            candidates = [c for c in named if c[1] in used and not _held_out(c[1])]
            if not candidates or not (splits or held_out):
                continue
            stat_name, data_name, stat_value = candidates[0]
            where = position(node)
            later = [s.lineno for s in splits if position(s) > where and normalised in names_in(s)]
            later += [pos[0] for pos, base in held_out if pos > where and base == normalised]
            if later and id(stat_value) not in reported:
                reported.add(id(stat_value))
                message = t(
                    "{stat} is computed on all of {data} and used to normalise it before the split on "
                    "line {line}: evaluation rows shape the training features; compute it on the "
                    "training split only",
                    stat=stat_name,
                    data=data_name,
                    line=min(later),
                )
                yield NORMALISATION_LEAKAGE.finding(path, facts.span(stat_value), message)


def _held_out(name: str) -> bool:
    named = set(words(name))
    return bool(HELD_OUT_WORDS & named) and "train" not in named


def _pairs(node: ast.Assign) -> list[tuple[str, ast.expr]]:
    """(name, value) bound by ``a = v`` or ``a, b = v, w``."""
    out: list[tuple[str, ast.expr]] = []
    for target in node.targets:
        if isinstance(target, ast.Name):
            out.append((target.id, node.value))
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(node.value, (ast.Tuple, ast.List)):
            if len(target.elts) == len(node.value.elts):
                out.extend(
                    (element.id, value)
                    for element, value in zip(target.elts, node.value.elts, strict=True)
                    if isinstance(element, ast.Name)
                )
    return out


def _held_out_rows(node: ast.Assign) -> list[tuple[tuple[int, int], str]]:
    """(position, indexed name) for held-out rows taken by indexing: ``X_test = X[n:]``, ``x_val = x[val_mask]``."""
    out: list[tuple[tuple[int, int], str]] = []
    for name, value in _pairs(node):
        if not _held_out(name):
            continue
        if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name):
            out.append((position(node), value.value.id))
    return out


def _per_row(call: ast.Call) -> bool:
    """``x.mean(dim=1, keepdim=True)``: a statistic within each row (instance normalisation), not over the rows."""
    recv = receiver(call)
    functional = recv is not None and last_name(recv) in ("np", "numpy", "torch")
    given = call.args[1:] if functional else call.args
    axis = next((k.value for k in call.keywords if k.arg in ("dim", "axis")), given[0] if given else None)
    if axis is None:
        return False
    values = axis.elts if isinstance(axis, (ast.Tuple, ast.List)) else [axis]
    constants = [v.value for v in values if isinstance(v, ast.Constant)]
    return len(constants) == len(values) and 0 not in constants


def _statistic_of(value: ast.expr) -> str | None:
    """``X.mean(...)`` / ``np.mean(X, ...)`` / ``X.std(...)`` -> ``X``."""
    if not isinstance(value, ast.Call) or method(value) not in STAT_METHODS:
        return None
    if _per_row(value):
        return None
    recv = receiver(value)
    if isinstance(recv, ast.Name) and recv.id not in ("np", "numpy", "torch"):
        return recv.id
    if value.args and isinstance(value.args[0], ast.Name):
        return value.args[0].id
    return None
