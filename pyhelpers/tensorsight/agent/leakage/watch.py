"""Leakage watch (option ``checkLeakage``, default on): checks the train/val/test splits a script builds, once.

Armed by ``install`` (debugger and doctor). It never runs user code: it reads variables, and looks at their types and
attributes statically (``agent.leakage.splits.has_static``: no ``__getattr__``, no property), so an object that
computes its attributes is neither run nor a reason to give up the check. At the program's first optimizer step, and
again when the run finishes (for splits made after training, and for scripts that never step), it looks through the
user's namespaces (the frames of user code on the stack, and the module globals of the script that imported
numpy/torch) for values whose names say they are splits (``X_train``, ``y_test``, ``train_ds``, ``val_loader``,
``test_idx``, ``df_test``...; see ``core.leakage.split_role``) and for ``Subset``s of one dataset (``random_split``
results). It reads their data without copying where it can (``Dataset.__getitem__`` is never called;
``agent.leakage.splits``: slices and index views of one array are known by their rows in it, custom datasets by
their stored attributes), runs ``core.leakage.check_splits`` within ``leakageBudgetSeconds`` (default 5 s), and
publishes each issue as a ``leakage`` finding at the line that builds the split (or, for a custom ``Dataset`` that
picks its rows in ``__init__``, the line that picks them). A held-out split with no training split named beside it
is compared with the other views of its array in the same scope (``input = data[3:]`` next to
``test_input = data[:5]``). Splits kept as attributes of one object (a graph's ``data.train_mask``/``data.test_mask``,
boolean masks standing for the positions they select) are found among the attributes of the scopes' objects and
reported where the attribute is assigned. What the evaluation reads is decided by identity, not by name: every
held-out loader or dataset is compared with the training values by storage (rows of the same tensor or buffer) and
by dataset (``Subset`` indices), so ``test_loader = DataLoader(train_set)`` is found even when a ``test_x`` exists
and would be the split's data by name. Objects already checked are not checked again.

Beside the split pairs, the same pass looks at what the splits' values show about their preparation and order:
features standardized with statistics of every split (``core.split_statistics``, reported where those statistics
are computed, ``agent.leakage.sources``), training loaders reading label-grouped data unshuffled
(``agent.leakage.order``), and inputs and targets that stop being pairs (``agent.leakage.pairing``: a flip of the
input alone, two random permutations). Overlaps of rows taken with a named index (``a[test_rows]``) are reported
where that index is drawn.
"""

from __future__ import annotations

import ast
import atexit
import inspect
import linecache
import os
import sys
from collections.abc import Iterable, Mapping
from types import (
    BuiltinFunctionType,
    FrameType,
    FunctionType,
    GetSetDescriptorType,
    MemberDescriptorType,
    MethodType,
    ModuleType,
)
from typing import Any

from tensorsight.agent.leakage.pairing import dataset_of, one_sided_augmentation, separate_permutations
from tensorsight.agent.leakage.sources import index_line, statistics_line
from tensorsight.agent.leakage.splits import (
    MISSING,
    has_static,
    split_from_parts,
    static_attribute,
    storage_rows,
    to_array,
)
from tensorsight.agent.runtime import events, steps
from tensorsight.agent.runtime.guard import never_raise, report_once
from tensorsight.agent.runtime.lazy_import import when_imported
from tensorsight.agent.runtime.options import option
from tensorsight.agent.runtime.user_code import is_user_file, user_frame
from tensorsight.core.findings import Finding
from tensorsight.core.protocol import option_default

DEFAULT_BUDGET_SECONDS: float = option_default("leakageBudgetSeconds")
MAX_NAMES_PER_SCOPE = 2000
MAX_HOLDERS_PER_SCOPE = 200  # objects per scope whose attributes are read for splits (``data.test_mask``)
MAX_ATTRIBUTES = 64
MAX_TRAINING_VALUES = 16  # training values, and held-out loaders/datasets, compared by identity (_held_out_readers)
MAX_READERS = 16
MIN_ROWS = 2

_namespaces: list[tuple[str, dict[str, Any]]] = []  # (file, module globals) of user modules seen importing
_checked: set[tuple[str, str, int]] = set()
_assignments: dict[str, dict[str, list[int]]] = {}
_armed = False
_budget = DEFAULT_BUDGET_SECONDS


def arm(origin: str = "debugger") -> None:
    global _armed, _budget
    if _armed or not option("checkLeakage"):
        return
    _armed = True
    budget = option("leakageBudgetSeconds")
    if isinstance(budget, (int, float)) and not isinstance(budget, bool) and budget > 0:
        _budget = float(budget)
    else:
        report_once(
            "leakage-budget",
            f"leakageBudgetSeconds must be a positive number, got {budget!r}; using {DEFAULT_BUDGET_SECONDS:g}",
        )
    steps.add_step_listener(_on_step)
    events.subscribe(_on_event, ("run-finished",))
    when_imported("numpy", _remember_importer)
    when_imported("torch", _remember_importer)
    if origin != "doctor":
        atexit.register(_at_exit)


@never_raise()
def _remember_importer(module: ModuleType) -> None:
    """Keep the globals of the user module whose import brought numpy/torch in (where splits usually live)."""
    frame = user_frame(sys._getframe(1))
    if frame is not None:
        _remember(frame.f_code.co_filename, frame.f_globals)


def _remember(file: str, scope: dict[str, Any]) -> None:
    if not any(existing is scope for _, existing in _namespaces):
        _namespaces.append((os.path.abspath(file), scope))


@never_raise()
def _on_step(step: int, optimizer: Any) -> None:
    if step != 1:
        return
    scopes: list[tuple[str, Mapping[str, Any], FrameType | None]] = []
    frame = user_frame(sys._getframe(1))
    while frame is not None:
        if is_user_file(frame.f_code.co_filename):
            file = os.path.abspath(frame.f_code.co_filename)
            if frame.f_locals is not frame.f_globals:
                scopes.append((file, frame.f_locals, frame))
            _remember(file, frame.f_globals)
        frame = frame.f_back
    scopes.extend((file, scope, None) for file, scope in _namespaces)
    check_scopes(scopes)


@never_raise()
def _on_event(event: dict[str, Any]) -> None:
    if event.get("type") == "run-finished":
        _at_exit()


@never_raise()
def _at_exit() -> None:
    if _namespaces:
        check_scopes([(file, scope, None) for file, scope in _namespaces])


# ---- finding the splits --------------------------------------------------------------------------------------------


def _candidate_value(value: Any) -> bool:
    """Values that can hold samples: arrays, tensors, frames, datasets and loaders (not functions, numbers...).

    Decided from the value's type alone (``type(value)``, never ``value.__class__``) and static attribute lookups.
    """
    kind = type(value)
    if value is None or issubclass(kind, (str, bytes, int, float, bool, type, dict, set, frozenset)):
        return False
    if issubclass(kind, (list, tuple)):  # the built-in length, not a subclass's __len__
        return (list.__len__ if issubclass(kind, list) else tuple.__len__)(value) >= MIN_ROWS
    module = kind.__module__ if isinstance(kind.__module__, str) else ""
    if module.startswith(("numpy", "torch", "pandas")):
        return has_static(kind, "__len__") or has_static(value, "shape")
    return has_static(kind, "__len__") and has_static(kind, "__getitem__")


def _is_subset(value: Any) -> bool:
    """A ``Subset``-like view (``random_split`` results): stored ``dataset`` and ``indices``, and not a loader."""
    return (
        static_attribute(value, "dataset") is not MISSING
        and static_attribute(value, "indices") is not MISSING
        and not has_static(value, "batch_size")
    )


def collect_splits(
    scopes: Iterable[tuple[str, Mapping[str, Any], FrameType | None]],
) -> tuple[dict[str, dict[str, tuple[str, Any, str]]], list[tuple[str, Any, str]]]:
    """Split-named values per split and role (innermost scope wins), and ``Subset``s of a shared dataset.

    Returns ``({split: {role: (name, value, file)}}, [(name, subset, file), ...])``.
    """
    from tensorsight.core.leakage import split_role

    found: dict[str, dict[str, tuple[str, Any, str]]] = {}
    subsets: list[tuple[str, Any, str]] = []
    seen_ids: set[int] = set()
    scopes = list(scopes)
    files = [file for file, _, _ in scopes]
    for file, scope, _ in scopes:
        holders: list[tuple[str, Any]] = []
        for i, (name, value) in enumerate(list(scope.items())):
            if i >= MAX_NAMES_PER_SCOPE:
                break
            if name.startswith("__"):
                continue
            if not _candidate_value(value):
                if not name.startswith("_") and len(holders) < MAX_HOLDERS_PER_SCOPE and _stored_attributes(value):
                    holders.append((name, value))
                continue
            role = split_role(name)
            if role is not None:
                split, kind = role
                current = found.setdefault(split, {}).get(kind)
                if current is None or (kind == "data" and _data_priority(value) < _data_priority(current[1])):
                    found[split][kind] = (name, value, file)
            if _is_subset(value) and id(value) not in seen_ids:
                seen_ids.add(id(value))
                subsets.append((name, value, file))
        # splits kept as attributes of one object (a graph's ``data.train_mask``/``data.test_mask``): below the
        # scope's own names, and pointed at the file that assigns the attribute
        for owner, holder in holders:
            for attribute, value in _stored_attributes(holder):
                role = split_role(attribute)
                if role is None or not _candidate_value(value):
                    continue
                name = f"{owner}.{attribute}"
                where = next((f for f in [file, *files] if _lines_assigning(f, name)), file)
                found.setdefault(role[0], {}).setdefault(role[1], (name, value, where))
    return found, subsets


def _stored_attributes(value: Any) -> list[tuple[str, Any]]:
    """The plain instance attributes of a user object (its ``__dict__``, read without running its code), at most
    ``MAX_ATTRIBUTES``; empty for modules, classes, functions, containers and objects without a plain ``__dict__``."""
    kind = type(value)
    if issubclass(kind, (type, ModuleType, FunctionType, MethodType, BuiltinFunctionType, str, bytes, int, float)):
        return []
    try:
        if not isinstance(inspect.getattr_static(kind, "__dict__", None), (GetSetDescriptorType, MemberDescriptorType)):
            return []  # no instance dict, or a class that computes its own ``__dict__``: nothing to read statically
        stored = object.__getattribute__(value, "__dict__")
    except Exception:  # noqa: BLE001 - an exotic metaclass or object: nothing read
        return []
    if type(stored) is not dict:
        return []
    return [(k, v) for k, v in list(stored.items())[:MAX_ATTRIBUTES] if type(k) is str and not k.startswith("_")]


def _data_priority(value: Any) -> int:
    """Prefer the most direct view of the samples: arrays/frames, then datasets, then loaders."""
    if has_static(value, "batch_size") and has_static(value, "dataset"):
        return 2
    if has_static(value, "shape"):
        return 0
    return 1


def check_scopes(scopes: Iterable[tuple[str, Mapping[str, Any], FrameType | None]]) -> list[Finding]:
    """Find split variables in ``scopes``, check the ones not checked yet, publish and return the findings."""
    if "numpy" not in sys.modules:
        return []  # nothing array-like can exist without numpy (torch imports it)
    from tensorsight.core import leakage

    roles, subsets = collect_splits(scopes)
    ordered = _order_findings(scopes) + _pairing_findings(roles)
    splits: dict[str, leakage.SplitData] = {}
    origin: dict[str, tuple[Any, ...]] = {}  # split data name -> (variable name, file[, line where it is made])
    keys: set[tuple[str, str, int]] = set()
    for split, parts in roles.items():
        main = parts.get("features")
        if main is None and "data" in parts:
            main = parts["data"]
        labels, ids, times = parts.get("labels"), parts.get("ids"), parts.get("times")
        if main is None and ids is None:
            continue
        anchor = main or ids
        assert anchor is not None
        name, _, file = anchor
        data = split_from_parts(
            name,
            main[1] if main is not None else None,
            labels=labels[1] if labels is not None else None,
            ids=ids[1] if ids is not None else None,
            times=times[1] if times is not None else None,
        )
        if data.size() < MIN_ROWS:
            continue
        splits[split] = data
        origin[name] = (name, file)
        for part in (main, labels, ids, times):
            if part is not None:
                keys.add((split, part[0], id(part[1])))
    extra: list[tuple[leakage.SplitData, leakage.SplitData]] = []
    if "train" not in splits:
        for held_out, partner in _unnamed_training_rows(scopes, roles, splits):
            key = ("partner", partner.name, id(partner))
            keys.add(key)
            origin.setdefault(partner.name, (partner.name, origin[held_out.name][1]))
            extra.append((partner, held_out))
    readers = _held_out_readers(scopes, roles, splits)
    for _, reader_name, value, file, _ in readers:
        keys.add(("reader", reader_name, id(value)))
        origin.setdefault(reader_name, (reader_name, file))
    named = {key[2] for key in keys}
    # Subsets of one dataset that the names did not reveal (``a, b = random_split(ds, ...)``): index overlap only.
    by_base: dict[int, list[tuple[str, Any, str]]] = {}
    for item in subsets:
        by_base.setdefault(id(static_attribute(item[1], "dataset")), []).append(item)
    for group in by_base.values():
        for i in range(len(group)):
            for j in range(i + 1, len(group)):
                (name_a, a, file_a), (name_b, b, file_b) = group[i], group[j]
                if id(a) in named and id(b) in named:
                    continue  # already compared as named splits
                key_a, key_b = ("subset", name_a, id(a)), ("subset", name_b, id(b))
                if {key_a, key_b} <= _checked:
                    continue
                keys.update((key_a, key_b))
                origin.setdefault(name_a, (name_a, file_a))
                origin.setdefault(name_b, (name_b, file_b))
                extra.append((_subset_split(name_a, a), _subset_split(name_b, b)))
    if keys <= _checked:
        for finding in ordered:
            events.emit_finding(finding)
        return ordered
    _checked.update(keys)
    findings: list[Finding] = list(ordered)
    for data in splits.values():
        if data.made_at is not None:  # rows chosen inside a custom Dataset class: the finding goes there
            origin[data.name] = (data.name, data.made_at[0], data.made_at[1])
    read_training = [issue for *_, issue in readers]
    findings.extend(_to_findings(read_training, origin))
    if splits:
        report = leakage.check_splits(splits, budget_seconds=_budget)
        reported = {issue.splits[-1] for issue in read_training}  # said already, as an evaluation on training data
        findings.extend(_to_findings([i for i in report.issues if i.splits[-1] not in reported], origin))
        for note in report.notes:
            report_once(f"leakage-note-{note}", f"leakage check: {note}")
        findings.extend(_statistics_findings(splits, origin))
    for a, b in extra:
        issue = leakage.check_id_overlap(a, b)
        if issue is not None:
            findings.extend(_to_findings([issue], origin))
    for finding in findings:
        events.emit_finding(finding)
    return findings


def _order_findings(scopes: Iterable[tuple[str, Mapping[str, Any], FrameType | None]]) -> list[Finding]:
    """Training loaders that read label-grouped data in stored order (``agent.leakage.order``), each once: the
    loaders named for training (``train_loader``), else, when no loader is, those named for no split (``loader``)."""
    from tensorsight.agent.leakage.order import is_loader, unshuffled_grouped
    from tensorsight.core.leakage import split_role

    names: dict[int, list[tuple[str, Any, str]]] = {}  # loader -> every (name, value, file) it goes by
    for file, scope, _ in scopes:
        for i, (name, value) in enumerate(list(scope.items())):
            if i >= MAX_NAMES_PER_SCOPE:
                break
            if name.startswith("_") or not _candidate_value(value) or not is_loader(value):
                continue
            names.setdefault(id(value), []).append((name, value, file))
    named: list[tuple[str, Any, str]] = []
    unnamed: list[tuple[str, Any, str]] = []
    for aliases in names.values():
        roles = [split_role(name) for name, _, _ in aliases]
        if any(role is not None and role[0] != "train" for role in roles):
            continue  # an evaluation loader under some name: its order does not matter
        # the name the loader is built under (``train_loader = DataLoader(...)``), not a parameter it is passed as
        aliases.sort(key=lambda alias: not _lines_assigning(alias[2], alias[0]))
        trained = [alias for alias, role in zip(aliases, roles, strict=True) if role is not None]
        (named if trained else unnamed).append(aliases[0])
    findings = []
    for name, value, file in (named or unnamed)[:MAX_READERS]:
        key = ("order", name, id(value))
        if key in _checked:
            continue
        _checked.add(key)
        found = unshuffled_grouped(name, value)
        if found is not None:
            message, details = found
            line = assignment_line(file, name)
            findings.append(
                Finding("training-logic", "warning", message, file, line, steps.current_step() or None, None, details)
            )
        augmented = one_sided_augmentation(name, dataset_of(value))
        if augmented is not None:
            where, line, message, details = augmented
            findings.append(
                Finding("training-logic", "warning", message, where, line, steps.current_step() or None, None, details)
            )
    return findings


def _pairing_findings(roles: Mapping[str, Mapping[str, tuple[str, Any, str]]]) -> list[Finding]:
    """The training split's inputs and labels reordered by two independent random draws (``agent.leakage.pairing``),
    once per pair of values."""
    parts = roles.get("train", {})
    features, labels = parts.get("features"), parts.get("labels")
    if features is None or labels is None or features[2] != labels[2]:
        return []
    key = ("pairing", f"{features[0]}/{labels[0]}", id(features[1]) ^ id(labels[1]))
    if key in _checked:
        return []
    _checked.add(key)
    found = separate_permutations(features[2], features[0], labels[0])
    if found is None:
        return []
    line, message, details = found
    return [
        Finding("training-logic", "warning", message, features[2], line, steps.current_step() or None, None, details)
    ]


def _held_out_readers(
    scopes: Iterable[tuple[str, Mapping[str, Any], FrameType | None]],
    roles: Mapping[str, Mapping[str, tuple[str, Any, str]]],
    splits: Mapping[str, Any],
) -> list[tuple[str, str, Any, str, Any]]:
    """Held-out loaders and datasets that read training samples, told by identity rather than by name.

    A script may hold several values named for one held-out split (``test_x`` and ``test_loader``); the checks
    compare the most direct one (``test_x``), but the evaluation reads the loader. Every held-out loader or dataset
    whose samples are rows of the same storage as a training value, or indices of the same dataset as a training
    ``Subset`` (``test_loader = DataLoader(train_set)``), is an evaluation on training data. Returns
    ``(split, name, value, file, issue)`` for each such reader.
    """
    from tensorsight.core.leakage import check_reads_training, split_role

    training: list[tuple[str, Any]] = []
    held_out: list[tuple[str, str, Any, str]] = []
    seen: set[int] = set()
    for file, scope, _ in scopes:
        for i, (name, value) in enumerate(list(scope.items())):
            if i >= MAX_NAMES_PER_SCOPE:
                break
            if name.startswith("__") or id(value) in seen or not _candidate_value(value):
                continue
            role = split_role(name)
            if role is None or role[1] not in ("features", "data"):
                continue
            seen.add(id(value))
            if role[0] == "train":
                training.append((name, value))
            elif role[0] in ("val", "test") and not _is_array(value) and not isinstance(value, (list, tuple)):
                held_out.append((role[0], name, value, file))
    if not training or not held_out:
        return []
    described: list[Any] = []
    for name, value in training[:MAX_TRAINING_VALUES]:
        data = split_from_parts(name, value)
        if data.storage is not None or data.base is not None:
            described.append(data)
    found = []
    for split, name, value, file in held_out[:MAX_READERS]:
        reader = split_from_parts(name, value)
        if reader.storage is None and reader.base is None:
            continue
        main = roles.get(split, {}).get("features") or roles.get(split, {}).get("data")
        held = splits.get(split)
        instead = None
        if main is not None and main[1] is not value and held is not None:
            if _same_positions(held, reader):
                continue  # a loader over the split's own data: the pair checks compare that data already
            if all(check_reads_training(train, held) is None for train in described):
                instead = main[0]  # the split's own data is held out: name it as what the reader should read
        for train in described:
            issue = check_reads_training(train, reader, instead)
            if issue is not None and issue.count == issue.total:
                # only training samples: an evaluation on the training data (a reader that overlaps the training
                # data in part is an overlap of ranges, which the pair checks report on the split's own data)
                found.append((split, name, value, file, issue))
                break
    # a loader over a dataset already found (``test_loader = DataLoader(test_set)``) is the same mistake, said once
    datasets = {id(value) for _, _, value, _, _ in found}
    return [item for item in found if id(static_attribute(item[2], "dataset")) not in datasets]


def _same_positions(a: Any, b: Any) -> bool:
    """Whether two ``SplitData`` are the same rows of one array or the same indices of one dataset."""
    import numpy as np

    if a.storage is not None and a.storage == b.storage and a.storage_rows is not None and b.storage_rows is not None:
        return bool(np.array_equal(a.storage_rows, b.storage_rows))
    if a.base is not None and a.base == b.base and a.indices is not None and b.indices is not None:
        return bool(np.array_equal(a.indices, b.indices))
    return False


def _unnamed_training_rows(
    scopes: Iterable[tuple[str, Mapping[str, Any], FrameType | None]],
    roles: Mapping[str, Mapping[str, tuple[str, Any, str]]],
    splits: Mapping[str, Any],
) -> list[tuple[Any, Any]]:
    """When the script names its held-out split (``test_input``) but not its training split (``input, target =
    data[3:, :-1], data[3:, 1:]``): the arrays of the same scope that are other rows of the held-out split's array.

    A partner must be another view of the same array, larger than the held-out split (a leftover batch is not a
    split) and not holding all of its rows (``X = data[:, :-1]``, the array the split was cut from, is no partner).
    Returns ``(held-out SplitData, partner SplitData)`` pairs to compare.
    """
    from tensorsight.core.leakage import SplitData, split_role

    pairs = []
    for split_name in ("val", "test"):
        held_out = splits.get(split_name)
        parts = roles.get(split_name, {})
        main = parts.get("features") or parts.get("data")
        if held_out is None or main is None or held_out.storage is None or held_out.storage_rows is None:
            continue
        held_rows = set(held_out.storage_rows.tolist())
        for _, scope, _ in scopes:
            if scope.get(main[0]) is not main[1]:
                continue
            for i, (name, value) in enumerate(list(scope.items())):
                if i >= MAX_NAMES_PER_SCOPE:
                    break
                if name.startswith("_") or split_role(name) is not None or value is main[1] or not _is_array(value):
                    continue
                found = storage_rows(value)
                if found is None or found[0] != held_out.storage or len(found[1]) <= len(held_rows):
                    continue
                rows = found[1]
                if held_rows <= set(rows.tolist()):
                    continue  # the array the split was cut from
                pairs.append((held_out, SplitData(name, storage=found[0], storage_rows=rows)))
    return pairs


def _is_array(value: Any) -> bool:
    """A tensor or ndarray, told from the value's type alone (never ``value.__class__``, which a user object can
    compute)."""
    kinds = tuple(
        kind
        for kind in (
            getattr(sys.modules.get("numpy"), "ndarray", None),
            getattr(sys.modules.get("torch"), "Tensor", None),
        )
        if isinstance(kind, type)
    )
    return bool(kinds) and issubclass(type(value), kinds)


def _subset_split(name: str, subset: Any) -> Any:
    from tensorsight.core.leakage import SplitData

    indices = static_attribute(subset, "indices")
    return SplitData(name, base=id(static_attribute(subset, "dataset")), indices=to_array(list(indices)))


def _statistics_findings(splits: Mapping[str, Any], origin: Mapping[str, tuple[Any, ...]]) -> list[Finding]:
    """Features standardized with statistics of every split (``core.split_statistics``), reported where the
    statistics the training split was standardized with are computed."""
    from tensorsight.core.split_statistics import statistics_over_all_splits

    train = splits.get("train")
    held_out = [splits[key] for key in ("val", "test") if key in splits]
    if train is None or not held_out:
        return []
    issue = statistics_over_all_splits(train, held_out)
    name, file, *_ = origin.get(train.name, (train.name, ""))
    if issue is None or not file:
        return []
    line = statistics_line(file, name) or assignment_line(file, name)
    details = issue.to_dict()
    return [Finding("leakage", issue.severity, issue.message, file, line, steps.current_step() or None, None, details)]


def _to_findings(issues: Iterable[Any], origin: Mapping[str, tuple[Any, ...]]) -> list[Finding]:
    out = []
    for issue in issues:
        # a pair issue points at the split that receives the leaked samples (the later one); a label issue at its split
        subject = issue.splits[-1]
        name, file, *made_at = origin.get(subject, (subject, ""))
        if not file:
            continue
        line = made_at[0] if made_at else assignment_line(file, name)
        if not made_at and issue.check in ("id-overlap", "duplicates"):
            # rows taken with a named index (``test_set = TensorDataset(*(a[test_rows] for a in data))``): the
            # overlap is fixed where that index is drawn
            line = index_line(file, name, line) or line
        out.append(
            Finding(
                "leakage",
                issue.severity,
                issue.message,
                file,
                line,
                steps.current_step() or None,
                None,
                issue.to_dict(),
            )
        )
    return out


# ---- where a split is built ----------------------------------------------------------------------------------------


def _assigned_names(node: ast.AST) -> Iterable[str]:
    targets: list[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    for target in targets:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                yield sub.id
            elif isinstance(sub, ast.Attribute):
                yield "." + sub.attr  # ``data.test_mask = ...``: found for any owner of the attribute


def assignment_line(file: str, name: str) -> int:
    """The first line of ``file`` that assigns ``name`` (1 when it cannot be found); for ``owner.attribute``, the
    first line that assigns that attribute."""
    lines = _lines_assigning(file, name)
    return min(lines) if lines else 1


def _lines_assigning(file: str, name: str) -> list[int]:
    if "." in name:
        name = "." + name.rsplit(".", 1)[1]
    table = _assignments.get(file)
    if table is None:
        table = {}
        try:
            tree = ast.parse("".join(linecache.getlines(file)))
        except (SyntaxError, ValueError):
            tree = None
        if tree is not None:
            for node in ast.walk(tree):
                lineno = getattr(node, "lineno", None)
                if lineno is None:
                    continue
                for assigned in _assigned_names(node):
                    table.setdefault(assigned, []).append(lineno)
        _assignments[file] = table
    return table.get(name, [])
