"""The data of one train/val/test split, read from the user's live objects into plain numpy arrays.

Runs in the user's process; called by the leakage watch (``agent.leakage.watch``, automatic) and by
``tensorsight.check_data_leakage`` (the toolbox). The checks themselves are pure and live in ``core.leakage``; this
module is where live objects are touched: tensors are viewed as numpy (detached, on the CPU), DataFrames hashed
with pandas' own row hash, ``Subset``/``DataLoader``/``TensorDataset`` unwrapped, slices and index views of one
tensor or ndarray known by their rows in it (``storage_rows``), custom datasets that store tensors read from their
instance attributes (with a stored ``start``/``stop`` range or index list), and, only when the caller allows it
(the toolbox: the user asked), any other sized dataset read through its ``__getitem__``, up to
``core.leakage.MAX_ITERATED_ITEMS`` items.

Without ``allow_iteration`` nothing here runs user code: attributes are read statically (``inspect.getattr_static``:
no ``__getattr__``, no property), so a user object that computes its attributes is skipped, not evaluated.
torch and pandas are used only when the program already imported them.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any

from tensorsight.agent.runtime.tensor_walk import is_tensor
from tensorsight.core.leakage import MAX_ITERATED_ITEMS, MAX_LABEL_COLUMNS, SplitData, object_keys

MISSING: Any = object()

_ID_NAMES = {"id", "ids", "uid", "uuid", "key", "sample_id", "record_id", "guid"}
_TIME_NAMES = {"time", "timestamp", "date", "datetime", "ts", "created", "created_at", "event_time"}
_LABEL_NAMES = {"label", "labels", "target", "targets", "y", "class", "outcome"}


def static_attribute(obj: Any, name: str) -> Any:
    """``obj.name`` when it is plain stored data (instance or class attribute), else ``MISSING``: never runs
    ``__getattr__``/``__getattribute__`` or a descriptor (a property, a method), so no user code runs."""
    try:
        value = inspect.getattr_static(obj, name, MISSING)
        if value is MISSING or inspect.getattr_static(type(value), "__get__", MISSING) is not MISSING:
            return MISSING
        return value
    except Exception:  # noqa: BLE001 - an exotic metaclass: treat as absent
        return MISSING


def has_static(obj: Any, name: str) -> bool:
    """Whether ``obj`` has attribute ``name`` (a slot, method or property counts), found without running user code."""
    try:
        return inspect.getattr_static(obj, name, MISSING) is not MISSING
    except Exception:  # noqa: BLE001
        return False


def _module(name: str) -> Any:
    return sys.modules.get(name)


def _tensor_to_numpy(t: Any) -> Any:
    """A read-only numpy view/copy of a tensor, or None (meta, sparse, quantized tensors have no plain data)."""
    torch = _module("torch")
    if t.device.type == "meta" or t.is_sparse or t.is_quantized or t.layout != torch.strided:
        return None
    with torch.no_grad():
        t = t.detach()
        if t.is_conj():
            t = t.resolve_conj()
        if t.is_neg():
            t = t.resolve_neg()
        if t.dtype in (torch.bfloat16,) or "float8" in str(t.dtype):
            t = t.float()
        if t.device.type != "cpu":
            t = t.cpu()
        return t.numpy()


def to_array(value: Any) -> Any:
    """numpy array for a tensor, ndarray, pandas object or sequence; None when that is not possible."""
    import numpy as np

    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return value
    if is_tensor(value):
        return _tensor_to_numpy(value)
    pd = _module("pandas")
    if pd is not None and isinstance(value, (pd.Series, pd.Index, pd.DataFrame)):
        return value.to_numpy()
    if isinstance(value, (list, tuple, range)):
        try:
            array = np.asarray(value)
        except (ValueError, TypeError):
            array = np.empty(len(value), dtype=object)
            array[:] = list(value)
        return array
    return None


def storage_rows(value: Any) -> tuple[int, Any] | None:
    """``(identity of the array underneath, row numbers in it)`` for a tensor or ndarray view, else None.

    Slices of one tensor share its storage: ``X[700:]`` is rows 700.. of the storage ``X[:800]`` also covers, which is
    how two splits cut from one dataset are told to overlap without comparing their content. Read from the view's
    storage pointer, offset and strides: no copy, no op on the data. The identity includes the row stride and the row
    shape, so a transpose is another array; views whose rows do not start on a row boundary (``X[:, 1:]``) give None.
    """
    import numpy as np

    if is_tensor(value):
        torch = _module("torch")
        if value.dim() == 0 or value.layout != torch.strided or value.device.type == "meta":
            return None
        stride = int(value.stride(0))
        offset = int(value.storage_offset())
        try:
            pointer = int(value.untyped_storage().data_ptr())
        except (RuntimeError, NotImplementedError):  # tensor subclasses without a plain storage
            return None
        key = (str(value.device), pointer, stride, tuple(value.shape[1:]), str(value.dtype))
    elif isinstance(value, np.ndarray):
        if value.ndim == 0:
            return None
        root = value
        while isinstance(root.base, np.ndarray):
            root = root.base
        stride = int(value.strides[0])
        offset = int(value.__array_interface__["data"][0]) - int(root.__array_interface__["data"][0])
        pointer = int(root.__array_interface__["data"][0])
        key = ("numpy", pointer, stride, tuple(value.shape[1:]), str(value.dtype))
    else:
        return None
    if stride <= 0 or offset % stride or len(value) == 0:
        return None
    rows = np.arange(len(value), dtype=np.int64) + offset // stride
    return hash(key), rows


def _with_storage(split: SplitData, value: Any) -> SplitData:
    found = storage_rows(value)
    if found is not None:
        split.storage, split.storage_rows = found
    return split


def _plain_item(item: Any) -> Any:
    """An item of a dataset or list as plain data for ``core.leakage.object_keys`` (tensors become arrays)."""
    if isinstance(item, (str, bytes, int, float)):
        return item
    array = to_array(item)
    return array if array is not None else item


def _frame_split(df: Any, name: str, label: str | None, id_column: str | None, time_column: str | None) -> SplitData:
    pd = _module("pandas")
    columns = [str(c) for c in df.columns]
    by_name = dict(zip(columns, df.columns, strict=False))

    def pick(explicit: str | None, test: Callable[[str], bool]) -> str | None:
        if explicit is not None:
            return explicit if explicit in by_name else None
        return next((c for c in columns if test(c)), None)

    id_col = pick(id_column, lambda c: c.lower() in _ID_NAMES or c.lower().endswith("_id"))
    time_col = pick(
        time_column,
        lambda c: (
            c.lower() in _TIME_NAMES
            or c.lower().endswith(("_time", "_date", "_at"))
            or str(df[by_name[c]].dtype).startswith("datetime64")
        ),
    )
    label_col = pick(label, lambda c: c.lower() in _LABEL_NAMES)
    feature_cols = [c for c in columns if c not in {id_col, time_col, label_col}]
    split = SplitData(name)
    if feature_cols:
        features = df[[by_name[c] for c in feature_cols]]
        split.row_keys = pd.util.hash_pandas_object(features, index=False).to_numpy()
        split.columns = {c: df[by_name[c]].to_numpy() for c in feature_cols[:MAX_LABEL_COLUMNS]}
    if id_col is not None:
        split.ids = df[by_name[id_col]].to_numpy()
    if time_col is not None:
        split.times = df[by_name[time_col]].to_numpy()
    if label_col is not None:
        split.labels = df[by_name[label_col]].to_numpy()
    return split


def describe(
    obj: Any,
    name: str,
    *,
    allow_iteration: bool = False,
    label: str | None = None,
    id_column: str | None = None,
    time_column: str | None = None,
) -> SplitData | None:
    """What the checks can use from one split object; None when nothing is readable without running user code.

    Understood: tensors, ndarrays, lists, pandas DataFrames/Series, ``(features, labels)`` tuples, torch
    ``TensorDataset``/``Subset``/``DataLoader`` (only the rows its sampler's ``indices`` pick, when it has them),
    datasets exposing ``.data``/``.targets`` arrays, and (only with
    ``allow_iteration``, since ``__getitem__`` is user code) any sized dataset, up to ``MAX_ITERATED_ITEMS`` items.
    """
    import numpy as np

    pd = _module("pandas")
    if pd is not None and isinstance(obj, pd.DataFrame):
        return _frame_split(obj, name, label, id_column, time_column)
    if isinstance(obj, (np.ndarray, list, tuple, range)) or _arraylike(obj):
        return _describe_values(obj, name)
    dataset = static_attribute(obj, "dataset")
    if dataset is not MISSING and has_static(obj, "batch_size") and has_static(obj, "sampler"):  # a DataLoader
        sampler = static_attribute(obj, "sampler")
        chosen = static_attribute(sampler, "indices") if sampler is not MISSING else MISSING
        if chosen is not MISSING and (isinstance(chosen, (list, tuple, range)) or _arraylike(chosen)):
            # a loader that reads only some of its dataset (``sampler=SubsetRandomSampler(val_idx)``): those rows
            return _describe_subset(dataset, chosen, name, allow_iteration)
        return describe(dataset, name, allow_iteration=allow_iteration)
    indices = static_attribute(obj, "indices")
    if dataset is not MISSING and indices is not MISSING:  # a Subset
        return _describe_subset(dataset, indices, name, allow_iteration)
    tensors = static_attribute(obj, "tensors")
    if isinstance(tensors, tuple) and tensors and all(is_tensor(t) for t in tensors):  # TensorDataset
        split = _with_storage(SplitData(name, rows=to_array(tensors[0])), tensors[0])
        if len(tensors) > 1:
            split.labels = to_array(tensors[1])
            split.parts = _parts(tensors)
        return split
    data = static_attribute(obj, "data")
    if data is not MISSING and data is not None and _arraylike(data) and has_static(type(obj), "__len__"):
        split = _with_storage(SplitData(name, rows=to_array(data)), data)
        targets = static_attribute(obj, "targets")
        if targets is not MISSING and targets is not None:
            split.labels = to_array(targets)
            split.parts = _parts((data, targets))
        return split
    if has_static(type(obj), "__getitem__") and has_static(type(obj), "__len__"):
        wrapped = _describe_wrapper(obj, name)
        if wrapped is not None:
            return wrapped
        if allow_iteration:
            return _iterate_dataset(obj, name)
    return None


_RANGE_NAMES = (("start", "stop"), ("start", "end"), ("begin", "end"), ("lo", "hi"), ("low", "high"))
_INDEX_NAMES = {"indices", "idx", "idxs", "index", "ids", "rows", "positions", "sample_ids", "keys"}


def _range_name(name: str) -> str:
    lowered = name.lower().strip("_")
    for suffix in ("_index", "_idx", "index", "idx"):
        if lowered.endswith(suffix) and len(lowered) > len(suffix):
            return lowered[: -len(suffix)].rstrip("_")
    return lowered


def _describe_wrapper(obj: Any, name: str) -> SplitData | None:
    """A custom ``Dataset`` that keeps its samples in stored tensors/arrays, read from its instance attributes only
    (never ``__getitem__``): the rows it covers are the stored array's rows, narrowed by a stored index list
    (``self.indices``) or ``start``/``stop`` range when it has one. None when it stores no array."""
    import numpy as np

    try:
        stored = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return None
    if type(stored) is not dict:
        return None
    arrays = [(key, value) for key, value in list(stored.items())[:64] if _arraylike(value) and np.ndim(value) >= 1]
    if not arrays:
        return None
    count = _sample_count(type(obj), arrays)
    same_length = [(key, value) for key, value in arrays if len(value) == count]
    # the samples: the widest array of one row per sample (windows or images before their class ids)
    features_name, features = max(same_length, key=lambda item: _row_size(item[1]))
    window: Any = None
    ints = {_range_name(k): v for k, v in stored.items() if type(v) is int}
    for first, last in _RANGE_NAMES:
        if first in ints and last in ints and 0 <= ints[first] <= ints[last] <= count:
            window = np.arange(ints[first], ints[last], dtype=np.int64)
            break
    if window is None:
        for key, value in stored.items():
            if _range_name(key) in _INDEX_NAMES or key.lower().endswith(("_indices", "_idx")):
                positions = to_array(value) if isinstance(value, (list, tuple, range)) or _arraylike(value) else None
                if positions is not None and positions.ndim == 1 and positions.dtype.kind in "iu" and positions.size:
                    if 0 <= int(positions.min()) and int(positions.max()) < count:
                        window = positions.astype(np.int64, copy=False)
                        break
    rows = to_array(features)
    split = SplitData(name, rows=rows if window is None or rows is None else rows[window])
    found = storage_rows(features)
    if found is not None:
        split.storage, split.storage_rows = found[0], found[1] if window is None else found[1][window]
    if window is None:
        split.made_at = rows_chosen_in_class(type(obj), features_name)
    if len(same_length) > 1:  # the sample is every per-sample array together (an image and its mask)
        parts = _parts([value for _, value in same_length])
        split.parts = parts if parts is None or window is None else tuple(part[window] for part in parts)
    others = [value for key, value in same_length if key != features_name and _label_name(key)]
    if others:
        labels = to_array(others[0])
        if labels is not None:
            split.labels = labels if window is None else labels[window]
    return split


def _parts(values: Any) -> tuple[Any, ...] | None:
    """The arrays one sample is made of (``SplitData.parts``), as numpy; None unless all are readable and of one
    length."""
    arrays = [to_array(value) for value in values]
    if any(array is None or array.ndim == 0 for array in arrays) or len({len(array) for array in arrays}) != 1:
        return None
    return tuple(arrays)


def _row_size(value: Any) -> int:
    shape = tuple(value.shape)
    size = 1
    for extent in shape[1:]:
        size *= int(extent)
    return size if len(shape) > 1 else 0


def _label_name(key: str) -> bool:
    """``labels``, ``_targets``, ``y_true``, ``class_labels``: an attribute name with a label word among its words."""
    return any(word in _LABEL_NAMES for word in key.lower().split("_") if word)


def _sample_count(kind: type, arrays: list[tuple[str, Any]]) -> int:
    """How many samples a custom ``Dataset`` holds, told without calling its ``__len__``: the length of the attribute
    its ``__len__`` returns the length of (``len(self._records)``, ``self.samples.shape[0]``), read from the source;
    else the first dimension most of its arrays share (the larger one on a tie). Arrays of another length are
    statistics or lookup tables (class counts, a mean per channel), not samples."""
    lengths = {key: len(value) for key, value in arrays}
    named = _length_attribute(kind)
    if named in lengths:
        return lengths[named]
    votes: dict[int, int] = {}
    for length in lengths.values():
        votes[length] = votes.get(length, 0) + 1
    return max(votes, key=lambda length: (votes[length], length))


def _length_attribute(kind: type) -> str | None:
    """The attribute whose length a user ``__len__`` returns, read from its source with ``ast`` (never called):
    ``return len(self.X)``, ``return self.X.shape[0]``, ``return self.X.size(0)``; None for anything else."""
    import ast
    import linecache
    import textwrap

    function = inspect.getattr_static(kind, "__len__", None)
    code = getattr(function, "__code__", None)
    if code is None:
        return None
    lines = linecache.getlines(code.co_filename)
    first = code.co_firstlineno - 1
    if not 0 <= first < len(lines):
        return None
    block = [lines[first]]
    indent = len(lines[first]) - len(lines[first].lstrip())
    for line in lines[first + 1 : first + 40]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        block.append(line)
    try:
        tree = ast.parse(textwrap.dedent("".join(block)))
    except (SyntaxError, ValueError):
        return None
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef) or not node.args.args or len(node.body) != 1:
        return None
    own, statement = node.args.args[0].arg, node.body[0]
    if not isinstance(statement, ast.Return) or statement.value is None:
        return None
    value = statement.value
    target: ast.AST | None = None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "len" and value.args:
        target = value.args[0]  # len(self.X)
    elif isinstance(value, ast.Subscript) and isinstance(value.value, ast.Attribute) and value.value.attr == "shape":
        target = value.value.value  # self.X.shape[0]
    elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "size":
        target = value.func.value  # self.X.size(0)
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == own:
        return target.attr
    return None


def rows_chosen_in_class(kind: type, attribute: str) -> tuple[str, int] | None:
    """Where a custom ``Dataset`` class picks its rows itself: ``self.<attribute> = features[rows]`` in its
    ``__init__``, at the line that computes ``rows`` (``rows = slice(0, 960) if split == "train" else ...``) or at
    the assignment when the index is written there. None when the class stores what it was given (the split is then
    made where the object is built). Reads the source file with ``ast``; runs nothing.
    """
    import ast
    import linecache
    import os

    init = inspect.getattr_static(kind, "__init__", None)
    code = getattr(init, "__code__", None)
    if code is None:
        return None
    filename = code.co_filename
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError):
        return None
    function = next(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name == "__init__"
            and (node.decorator_list[0].lineno if node.decorator_list else node.lineno) == code.co_firstlineno
        ),
        None,
    )
    if function is None or not function.args.args:
        return None
    own = function.args.args[0].arg
    arguments = function.args
    parameters = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    assigned: dict[str, int] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, node.lineno)
    for node in ast.walk(function):
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Subscript):
            continue
        if not any(
            isinstance(t, ast.Attribute) and t.attr == attribute and isinstance(t.value, ast.Name) and t.value.id == own
            for t in node.targets
        ):
            continue
        index = node.value.slice
        if isinstance(index, ast.Name) and index.id in parameters and index.id not in assigned:
            return None  # rows given by the caller (``Windows(signal, order[:n])``): chosen where the object is built
        line = assigned.get(index.id, node.lineno) if isinstance(index, ast.Name) else node.lineno
        return os.path.abspath(filename), line
    return None


def _describe_values(obj: Any, name: str) -> SplitData | None:
    """An array, tensor, pandas Series, list or ``(features, labels)`` pair."""
    if type(obj) is tuple and len(obj) == 2 and all(_arraylike(v) for v in obj):
        features, labels = to_array(obj[0]), to_array(obj[1])
        if features is not None and labels is not None and len(features) == len(labels):
            split = _with_storage(SplitData(name, rows=features, labels=labels), obj[0])
            split.parts = (features, labels)
            return split
    array = to_array(obj)
    if array is None or array.ndim == 0:
        return None
    if array.dtype.kind == "O":
        return SplitData(name, row_keys=object_keys([_plain_item(v) for v in array]))
    return _with_storage(SplitData(name, rows=array), obj)


def _describe_subset(dataset: Any, indices: Any, name: str, allow_iteration: bool) -> SplitData:
    import numpy as np

    base = describe(dataset, name, allow_iteration=allow_iteration)
    positions = to_array(indices if isinstance(indices, np.ndarray) or is_tensor(indices) else list(indices))
    split = SplitData(name, base=id(dataset), indices=positions)
    if base is not None and positions is not None and positions.size:
        index = positions.astype(np.int64, copy=False)
        split.storage = base.storage
        for attr in ("rows", "row_keys", "labels", "ids", "times", "storage_rows"):
            value = getattr(base, attr)
            if value is not None and len(value) > int(index.max()):
                setattr(split, attr, value[index])
        if base.parts is not None and all(len(part) > int(index.max()) for part in base.parts):
            split.parts = tuple(part[index] for part in base.parts)
        split.notes.extend(base.notes)
    return split


def _arraylike(value: Any) -> bool:
    np = _module("numpy")
    pd = _module("pandas")
    return (
        (np is not None and isinstance(value, np.ndarray))
        or is_tensor(value)
        or (pd is not None and isinstance(value, (pd.Series, pd.Index, pd.DataFrame)))
    )


def _iterate_dataset(dataset: Any, name: str) -> SplitData:
    """Read a dataset through ``__getitem__`` (user code: only when the caller allowed it), up to a bound."""
    import numpy as np

    total = len(dataset)
    count = min(total, MAX_ITERATED_ITEMS)
    inputs, labels = [], []
    for i in range(count):
        item = dataset[i]
        if isinstance(item, (tuple, list)) and len(item) >= 2:
            inputs.append(_plain_item(item[0]))
            labels.append(item[1])
        else:
            inputs.append(_plain_item(item))
    split = SplitData(name, row_keys=object_keys(inputs))
    if labels and all(np.ndim(to_array(v) if _arraylike(v) else v) == 0 for v in labels[:100]):
        try:
            split.labels = np.asarray([v.item() if hasattr(v, "item") else v for v in labels])
        except (TypeError, ValueError):
            pass
    split.notes.append(
        f"{name}: read {count:,} of {total:,} items through __getitem__"
        + (" (random augmentations hide duplicates)" if count else "")
    )
    return split


def split_from_parts(
    name: str,
    data: Any = None,
    *,
    labels: Any = None,
    ids: Any = None,
    times: Any = None,
    allow_iteration: bool = False,
    label: str | None = None,
    id_column: str | None = None,
    time_column: str | None = None,
) -> SplitData:
    """Assemble one split from a data object and optional separate labels/ids/timestamps (a boolean mask as ids
    stands for the positions it selects)."""
    import numpy as np

    split = None
    if data is not None:
        split = describe(
            data, name, allow_iteration=allow_iteration, label=label, id_column=id_column, time_column=time_column
        )
        if split is None:
            split = SplitData(name, notes=[f"{name}: {type(data).__name__} has no readable data; skipped"])
    if split is None:
        split = SplitData(name)
    for attr, value in (("labels", labels), ("ids", ids), ("times", times)):
        if value is not None:
            array = to_array(value)
            if array is None or array.ndim == 0:
                continue
            if attr == "ids" and array.ndim == 1 and array.dtype.kind == "b":
                # a boolean mask over one set of samples (``data.train_mask``): the positions it selects are its ids
                array = np.flatnonzero(array)
                split.ids_from_mask = True
            setattr(split, attr, array.reshape(len(array), -1)[:, 0] if array.ndim > 1 else array)
    return split
