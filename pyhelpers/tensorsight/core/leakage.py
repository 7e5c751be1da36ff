"""Data-leakage checks between train/val/test splits, vectorised so 1e6 rows take about a second.

Called by ``tensorsight.check_data_leakage`` (the toolbox), by the agent's leakage watch (automatic, on the splits a
script builds) and by the demo, on ``SplitData`` of plain numpy arrays: reading a split out of the user's live objects
(tensors, DataFrames, datasets) is ``agent.leakage.splits``. The checks:
- **id overlap**: the same sample id (an id column, index arrays such as ``train_idx``, the positions two boolean
  masks such as ``train_mask``/``test_mask`` select, or the indices of two ``Subset``s of one dataset) in two splits,
  or the same rows of one array in two splits sliced or indexed out of it;
- **evaluation on training data**: a held-out loader or dataset whose samples are, by identity (the same storage,
  the same dataset's indices), training samples, whatever its name and whatever other held-out arrays exist;
- **duplicates**: the same sample content in two splits, found by a 64-bit hash per row (numpy row bytes mixed word by
  word; pandas' own row hash for DataFrames) and confirmed byte for byte; a row that is one value repeated (the
  padding rows of a batchified token stream) is no sample and never counts;
- **label leaks**: a feature column identical to the label, an exact linear function of it, or one that determines
  it (each value maps to one label);
- **temporal leakage**: test (or val) samples dated before the latest training sample.

Pure: numpy arrays in, issues out; no I/O, no user object touched, numpy imported only when a check runs (the caller
already has it). Work is bounded: at most ``MAX_ROWS`` rows per split (a deterministic
stride beyond that), at most ``MAX_HASH_WORDS`` words hashed per row (wider rows are confirmed by a full compare),
label checks on a strided sample of ``LABEL_SAMPLE_ROWS`` rows, and a time budget after which remaining checks are
skipped with a note.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tensorsight.core.l10n import t

MAX_ROWS = 5_000_000
MAX_HASH_WORDS = 64
LABEL_SAMPLE_ROWS = 200_000
MAX_LABEL_COLUMNS = 256
MAX_ITERATED_ITEMS = 100_000
EXAMPLES = 5

# FNV-1a prime and offset basis, then the splitmix64 finaliser's multipliers (as uint64 at hashing time)
_PRIME = 0x100000001B3
_SEED = 0xCBF29CE484222325
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB

SPLIT_ORDER = ("train", "val", "test")


# ---- recognising split names ---------------------------------------------------------------------------------------

_SPLIT_WORDS = {
    "train": "train",
    "training": "train",
    "trn": "train",
    "val": "val",
    "valid": "val",
    "validation": "val",
    "dev": "val",
    "eval": "val",
    "test": "test",
    "testing": "test",
    "tst": "test",
    "holdout": "test",
    "heldout": "test",
}
_ROLE_WORDS = {
    "features": {"x", "feat", "feats", "features", "inputs", "input", "images", "imgs", "seqs", "tokens", "texts"},
    "labels": {"y", "label", "labels", "target", "targets", "lbl", "lbls"},
    "ids": {"id", "ids", "idx", "idxs", "index", "indices", "inds", "keys", "mask", "masks"},
    "times": {"t", "ts", "time", "times", "timestamp", "timestamps", "date", "dates"},
    "data": {"", "ds", "dataset", "data", "set", "loader", "dl", "df", "frame", "subset", "split", "samples", "dset"},
}
_ROLE_OF = {word: role for role, words in _ROLE_WORDS.items() for word in words}
_SPLIT_ALTERNATION = "|".join(sorted(_SPLIT_WORDS, key=len, reverse=True))


def split_role(name: str) -> tuple[str, str] | None:
    """``"X_train"`` -> ``("train", "features")``, ``"val_loader"`` -> ``("val", "data")``, ``"train_loss"`` -> None.

    A name is a split when one of its words is a split word (train/val/valid/test/...) and every other word is a
    data-role word (x, y, labels, ids, idx, times, ds, loader, df...). Compact forms (``xtrain``, ``trainset``) count.
    """
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()
    tokens = [t for t in re.split(r"[^a-z]+", spaced) if t]
    split: str | None = None
    rest: list[str] = []
    for token in tokens:
        if split is None:
            match = re.fullmatch(rf"([a-z]*?)({_SPLIT_ALTERNATION})([a-z]*)", token)
            if match and (match[1] in _ROLE_OF) and (match[3] in _ROLE_OF):
                split = _SPLIT_WORDS[match[2]]
                rest.extend(part for part in (match[1], match[3]) if part)
                continue
        rest.append(token)
    if split is None:
        return None
    roles = {_ROLE_OF.get(token) for token in rest}
    if None in roles:
        return None
    roles.discard("data")
    if len(roles) > 1:
        return None
    role = roles.pop() if roles else "data"
    return split, str(role)


# ---- the data of one split -----------------------------------------------------------------------------------------


@dataclass
class SplitData:
    """What one split offers to the checks; every field is optional.

    ``rows``: array ``[N, ...]`` (one sample per row) or ``row_keys``: precomputed uint64 hashes (DataFrames, lists
    of objects). ``base``/``indices``: a ``Subset``'s dataset identity and indices into it. ``storage``/
    ``storage_rows``: the identity of the one array (tensor storage, ndarray buffer) the samples are rows of, and
    their row numbers in it, for splits sliced or indexed out of one dataset (``X[:800]`` and ``X[700:]``, a custom
    ``Dataset`` keeping a range of shared tensors). ``ids_from_mask``: the ids are the positions a boolean mask over
    one set of samples selects (a graph's ``train_mask``/``test_mask``). ``columns``: feature columns by name for the
    label checks (DataFrames), else ``rows`` columns are used. ``parts``: the arrays that together make one sample
    (a ``TensorDataset``'s tensors, the per-sample arrays a custom ``Dataset`` stores: image and mask, user, item
    and rating), each ``[N, ...]``; the duplicates check then compares whole samples, so two splits sharing only
    their targets (the same masks under different images) share no sample.
    """

    name: str
    rows: Any = None
    row_keys: Any = None
    labels: Any = None
    ids: Any = None
    times: Any = None
    columns: dict[str, Any] | None = None
    base: int | None = None
    indices: Any = None
    storage: int | None = None
    storage_rows: Any = None
    made_at: tuple[str, int] | None = None  # (file, line) where the split's rows are chosen, when not where it is built
    ids_from_mask: bool = False  # ``ids`` are the positions a boolean mask selects (``data.test_mask``)
    parts: tuple[Any, ...] | None = None  # the arrays one sample is made of, each [N, ...] (see above)
    notes: list[str] = field(default_factory=list)
    total_rows: int | None = None

    def size(self) -> int:
        for value in (self.rows, self.row_keys, self.ids, self.labels, self.indices, self.storage_rows, self.times):
            if value is not None:
                return len(value)
        return 0


def _object_key(item: Any) -> bytes:
    import numpy as np

    if isinstance(item, str):
        return item.encode("utf-8", "surrogatepass")
    if isinstance(item, bytes):
        return item
    array = item if isinstance(item, np.ndarray) else None
    if isinstance(item, (list, tuple)):
        try:
            array = np.asarray(item)
        except (ValueError, TypeError):  # ragged: its repr is its key
            array = None
    if array is not None and array.dtype.kind != "O":
        return str(array.dtype).encode() + str(array.shape).encode() + np.ascontiguousarray(array).tobytes()
    return repr(item).encode("utf-8", "surrogatepass")


def object_keys(items: Iterable[Any]) -> Any:
    """64-bit content hashes of plain items (strings, bytes, numbers, nested lists, numpy arrays) via blake2b."""
    import numpy as np

    return np.fromiter(
        (int.from_bytes(hashlib.blake2b(_object_key(x), digest_size=8).digest(), "little") for x in items),
        dtype=np.uint64,
    )


# ---- hashing -------------------------------------------------------------------------------------------------------


def _row_bytes(rows: Any) -> Any:
    """``rows`` as a C-contiguous ``[N, bytes]`` uint8 array (a view when already contiguous)."""
    import numpy as np

    array = np.asarray(rows)
    n = array.shape[0] if array.ndim else 1
    flat = np.ascontiguousarray(array.reshape(n, -1))
    if flat.dtype.kind == "O":
        raise TypeError("object arrays are hashed by object_keys")
    return flat.view(np.uint8).reshape(n, -1)


def row_hashes(rows: Any) -> Any:
    """uint64 hash of each row's bytes: words mixed FNV-style, then a splitmix64 finaliser.

    Rows wider than ``MAX_HASH_WORDS`` words hash an evenly spaced subset of words, so the cost per row is bounded;
    callers confirm equal hashes with a full byte compare.
    """
    import numpy as np

    array = np.asarray(rows)
    if array.dtype.kind == "O":
        return object_keys(array)
    data = _row_bytes(array)
    n, width = data.shape
    if width == 0:
        return np.zeros(n, dtype=np.uint64)
    words = data
    for size, kind in ((8, np.uint64), (4, np.uint32), (2, np.uint16)):
        if width % size == 0:
            words = data.view(kind)
            break
    count = words.shape[1]
    if count <= MAX_HASH_WORDS:
        columns: Iterable[int] = range(count)
    else:
        columns = np.unique(np.linspace(0, count - 1, MAX_HASH_WORDS).round().astype(np.int64)).tolist()
    prime, mix1, mix2 = np.uint64(_PRIME), np.uint64(_MIX1), np.uint64(_MIX2)
    h = np.full(n, np.uint64(_SEED), dtype=np.uint64)
    word = np.empty(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in columns:
            np.copyto(word, words[:, j], casting="unsafe")
            h ^= word
            h *= prime
        h ^= np.uint64(width)
        h ^= h >> np.uint64(30)
        h *= mix1
        h ^= h >> np.uint64(27)
        h *= mix2
        h ^= h >> np.uint64(31)
    return h


def _match_keys(keys_a: Any, keys_b: Any) -> tuple[Any, Any]:
    """For each key of b, the index of an equal key in a: (indices into b, matching indices into a)."""
    import numpy as np

    if len(keys_a) == 0 or len(keys_b) == 0:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty
    order = np.argsort(keys_a, kind="stable")
    ordered = keys_a[order]
    pos = np.searchsorted(ordered, keys_b)
    pos[pos == len(ordered)] = 0
    hit = ordered[pos] == keys_b
    idx_b = np.nonzero(hit)[0]
    return idx_b, order[pos[idx_b]]


# ---- the report ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeakageIssue:
    """One leak: ``check`` is id-overlap, eval-on-train, duplicates, label-copy, label-linear, label-predictor or
    temporal."""

    check: str
    severity: str
    message: str
    splits: tuple[str, ...]
    count: int = 0
    total: int = 0
    examples: tuple[Any, ...] = ()
    column: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "check": self.check,
            "severity": self.severity,
            "message": self.message,
            "splits": list(self.splits),
            "count": int(self.count),
            "total": int(self.total),
            "examples": list(self.examples),
        }
        if self.column is not None:
            out["column"] = self.column
        return out


@dataclass
class LeakageReport:
    issues: list[LeakageIssue] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def __bool__(self) -> bool:
        return bool(self.issues)

    def by_check(self, check: str) -> list[LeakageIssue]:
        return [i for i in self.issues if i.check == check]

    def format(self) -> str:
        sizes = ", ".join(f"{name} {count:,} rows" for name, count in self.rows.items())
        head = f"Data leakage check ({sizes}; {self.seconds:.2f} s): "
        lines = [head + (f"{len(self.issues)} problem(s)" if self.issues else "no leakage found")]
        lines.extend(f"  [{i.severity}] {i.check}: {i.message}" for i in self.issues)
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)


def _plain(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _share(count: int, total: int) -> str:
    return t("{0} of {1}", f"{count:,}", f"{total:,}") + (f" ({100.0 * count / total:.1f}%)" if total else "")


def _overlap_severity(count: int, total: int) -> str:
    return "error" if total and count / total >= 0.01 else "warning"


def _cap(split: SplitData) -> SplitData:
    """Keep at most ``MAX_ROWS`` rows of a split (deterministic stride), noting it."""
    n = split.size()
    split.total_rows = n
    if n <= MAX_ROWS:
        return split
    step = -(-n // MAX_ROWS)
    for attr in ("rows", "row_keys", "labels", "ids", "times", "indices", "storage_rows"):
        value = getattr(split, attr)
        if value is not None and len(value) == n:
            setattr(split, attr, value[::step])
    if split.parts is not None:
        split.parts = tuple(part[::step] for part in split.parts) if all(len(p) == n for p in split.parts) else None
    if split.columns:
        split.columns = {k: v[::step] for k, v in split.columns.items()}
    split.notes.append(f"{split.name}: checked every {step}th row of {n:,}")
    return split


def _same_base(a: SplitData, b: SplitData) -> bool:
    return a.base is not None and a.base == b.base and a.indices is not None and b.indices is not None


def shares_storage(a: SplitData, b: SplitData) -> bool:
    """Whether two splits are rows of one array, and the id overlap check compares those rows (no ids of their own,
    not two ``Subset``s of one dataset)."""
    if (a.ids is not None and b.ids is not None) or _same_base(a, b):
        return False
    return (
        a.storage is not None and a.storage == b.storage and a.storage_rows is not None and b.storage_rows is not None
    )


def positional_overlap(a: SplitData, b: SplitData) -> bool:
    """Whether the id overlap check compares positions in one dataset (``Subset`` indices, rows of one array) rather
    than ids: then the samples it finds in both splits are the same samples, and their equal content is no news."""
    if a.ids is not None and b.ids is not None:
        return False
    return _same_base(a, b) or shares_storage(a, b)


def check_id_overlap(a: SplitData, b: SplitData) -> LeakageIssue | None:
    """Ids (or Subset indices of one dataset, or rows of one array) that appear in both splits; counted over ``b``."""
    import numpy as np

    if a.ids is not None and b.ids is not None:
        ids_a, ids_b, what = np.asarray(a.ids), np.asarray(b.ids), "ids"
    elif _same_base(a, b):
        ids_a, ids_b, what = np.asarray(a.indices), np.asarray(b.indices), "dataset indices"
    elif shares_storage(a, b):
        ids_a, ids_b = np.asarray(a.storage_rows), np.asarray(b.storage_rows)
        what = "rows"
    else:
        return None
    if ids_a.dtype.kind == "O" or ids_b.dtype.kind == "O":
        ids_a, ids_b = object_keys(ids_a), object_keys(ids_b)
        shown_b = np.asarray(b.ids if what == "ids" else b.indices)
    else:
        shown_b = ids_b
    mask = np.isin(ids_b, ids_a)
    count = int(mask.sum())
    if not count:
        return None
    examples = tuple(_plain(v) for v in shown_b[np.nonzero(mask)[0][:EXAMPLES]])
    shown = ", ".join(map(str, examples))
    if what == "rows":
        message = t(
            "{share} {b} samples are the same rows of one array as {a} samples "
            "(rows {shown}...): the splits were sliced or indexed out of one dataset with "
            "overlapping ranges; make the ranges disjoint (or use random_split)",
            share=_share(count, len(ids_b)),
            b=b.name,
            a=a.name,
            shown=shown,
        )
    elif what == "ids" and a.ids_from_mask and b.ids_from_mask:
        message = t(
            "{share} of the positions {b} selects are also selected by {a} (e.g. {shown}): the masks overlap, so the "
            "model is evaluated on samples it was trained on; build {b} from the positions outside {a}",
            share=_share(count, len(ids_b)),
            b=b.name,
            a=a.name,
            shown=shown,
        )
    elif what == "ids":
        message = t("{0} {1} ids also appear in {2} (e.g. {3})", _share(count, len(ids_b)), b.name, a.name, shown)
    else:
        message = t(
            "{0} {1} dataset indices also appear in {2} (e.g. {3})", _share(count, len(ids_b)), b.name, a.name, shown
        )
    return LeakageIssue(
        "id-overlap",
        _overlap_severity(count, len(ids_b)),
        message,
        (a.name, b.name),
        count,
        len(ids_b),
        examples,
    )


def check_reads_training(train: SplitData, reader: SplitData, instead: str | None = None) -> LeakageIssue | None:
    """A held-out loader or dataset (``reader``) whose samples are training samples by identity, not by name: rows of
    the same tensor storage or numpy buffer as ``train``, or indices of the same dataset as a ``Subset`` of it (a
    ``test_loader`` built on ``train_set``). ``instead``: the held-out data the script also has (``test_x``), named
    in the message. Counted over ``reader``; None when they are not views of one array or dataset, or share no row."""
    if not positional_overlap(train, reader):
        return None
    overlap = check_id_overlap(train, reader)
    if overlap is None:
        return None
    shown = ", ".join(map(str, overlap.examples))
    if instead:
        message = t(
            "{share} of the samples {reader} reads are {train} samples, the same rows in memory (rows {shown}...): "
            "it is built on the training data, so the model is evaluated on what it trained on, while {instead} "
            "holds the held-out samples; build {reader} on {instead}",
            share=_share(overlap.count, overlap.total),
            reader=reader.name,
            train=train.name,
            shown=shown,
            instead=instead,
        )
    else:
        message = t(
            "{share} of the samples {reader} reads are {train} samples, the same rows in memory (rows {shown}...): "
            "it is built on the training data, so the model is evaluated on what it trained on; build {reader} on "
            "the held-out split",
            share=_share(overlap.count, overlap.total),
            reader=reader.name,
            train=train.name,
            shown=shown,
        )
    return LeakageIssue(
        "eval-on-train",
        overlap.severity,
        message,
        (train.name, reader.name),
        overlap.count,
        overlap.total,
        overlap.examples,
    )


def check_duplicates(a: SplitData, b: SplitData) -> LeakageIssue | None:
    """Samples of ``b`` whose content exactly equals a sample of ``a`` (hash, then a byte compare for arrays)."""
    import numpy as np

    whole = _whole_sample_matches(a, b)
    if whole is not None:
        idx_b, idx_a, total = whole
    elif a.rows is not None and b.rows is not None:
        rows_a, rows_b = np.asarray(a.rows), np.asarray(b.rows)
        if rows_a.ndim == 1 and rows_b.ndim == 1 and rows_a.dtype.kind in "biu" and rows_b.dtype.kind in "biu":
            return None  # one integer per sample (a token stream, class ids): equal values are no evidence of a leak
        if rows_a.shape[1:] != rows_b.shape[1:] or rows_a.dtype != rows_b.dtype:
            numeric = rows_a.dtype.kind in "biuf" and rows_b.dtype.kind in "biuf"
            text = rows_a.dtype.kind == rows_b.dtype.kind and rows_a.dtype.kind in "US"
            if rows_a.shape[1:] == rows_b.shape[1:] and (numeric or text):
                common = np.result_type(rows_a.dtype, rows_b.dtype)
                rows_a, rows_b = rows_a.astype(common), rows_b.astype(common)
            else:
                return None
        if rows_a.dtype.kind == "O" or rows_b.dtype.kind == "O":
            idx_b, idx_a = _match_keys(object_keys(rows_a), object_keys(rows_b))
        else:
            idx_b, idx_a = _match_keys(row_hashes(rows_a), row_hashes(rows_b))
            if len(idx_b):
                bytes_a, bytes_b = _row_bytes(rows_a), _row_bytes(rows_b)
                same = np.ones(len(idx_b), dtype=bool)
                for start in range(0, len(idx_b), 65536):  # bounded temporaries on wide rows
                    stop = start + 65536
                    same[start:stop] = (bytes_a[idx_a[start:stop]] == bytes_b[idx_b[start:stop]]).all(axis=1)
                idx_b, idx_a = idx_b[same], idx_a[same]
            idx_b, idx_a = _without_constant_rows(rows_b, idx_b, idx_a)
        total = len(rows_b)
    elif a.row_keys is not None and b.row_keys is not None:
        idx_b, idx_a = _match_keys(np.asarray(a.row_keys), np.asarray(b.row_keys))
        total = len(b.row_keys)
    else:
        return None
    count = len(idx_b)
    if not count:
        return None
    examples = tuple((int(i), int(j)) for i, j in zip(idx_b[:EXAMPLES], idx_a[:EXAMPLES], strict=False))
    shown = ", ".join(f"{b.name}[{i}] = {a.name}[{j}]" for i, j in examples)
    return LeakageIssue(
        "duplicates",
        _overlap_severity(count, total),
        t("{0} {1} samples are exact copies of {2} samples (e.g. {3})", _share(count, total), b.name, a.name, shown),
        (a.name, b.name),
        count,
        total,
        examples,
    )


STREAM_WINDOW = 24  # tokens of a window of a token stream compared between splits
STREAM_MIN_DISTINCT = 4  # a window of fewer different tokens, or steps between them, proves nothing (padding, counting)
STREAM_SAMPLED = 2048  # held-out windows looked up
STREAM_SHARE = 0.5  # of them found in the training stream: the held-out stream is (in part) the training stream
STREAM_UNIQUE = 0.8  # share of the training stream's windows that must differ from each other (text, not a cycle)


def check_stream_overlap(a: SplitData, b: SplitData) -> LeakageIssue | None:
    """Token streams (integer arrays, 1-D or laid out in 2-D: rows of sequences, or ``batchify``'s columns) whose
    held-out windows of ``STREAM_WINDOW`` tokens run, token for token, in the training stream: a validation stream
    batchified from the training corpus (another batch size makes other rows, so no sample is a copy, but the text is
    the same). Both orientations of a 2-D array are read as runs of consecutive tokens."""
    import numpy as np

    if a.rows is None or b.rows is None:
        return None
    rows_a, rows_b = np.asarray(a.rows), np.asarray(b.rows)
    if rows_a.dtype.kind not in "iu" or rows_b.dtype.kind not in "iu" or rows_a.ndim > 2 or rows_b.ndim > 2:
        return None
    hashes = [h for run in _runs(rows_a) for h in _window_hashes(run).tolist()]
    known = set(hashes)
    if len(known) < STREAM_UNIQUE * len(hashes) or not known:
        return None  # a periodic column (hours of the day) repeats its windows: it is no text
    best: tuple[int, int] = (0, 0)
    for layout in (rows_b, rows_b.T) if rows_b.ndim == 2 else (rows_b,):
        windows = np.concatenate([_window_hashes(run) for run in _runs(layout, transposed=False)] or [np.zeros(0)])
        windows = windows[:: max(1, len(windows) // STREAM_SAMPLED)][:STREAM_SAMPLED]
        found = int(sum(1 for h in windows.tolist() if h in known))
        if len(windows) and found / len(windows) > (best[0] / best[1] if best[1] else 0.0):
            best = (found, len(windows))
    found, looked = best
    if not looked or found < STREAM_SHARE * looked:
        return None
    return LeakageIssue(
        "stream-overlap",
        "error",
        t(
            "{found} of {looked} windows of {window} tokens of {held} run, token for token, in {train}: the held-out "
            "token stream is (in part) the training stream; build it from its own text (e.g. batchify(corpus.valid))",
            found=found,
            looked=looked,
            window=STREAM_WINDOW,
            held=b.name,
            train=a.name,
        ),
        (a.name, b.name),
        found,
        looked,
    )


def _runs(array: Any, transposed: bool = True) -> list[Any]:
    """Runs of consecutive tokens an integer array holds: itself (1-D); its rows, and with ``transposed`` its columns
    too (2-D)."""
    if array.ndim == 1:
        return [array]
    return [*array, *(array.T if transposed else ())]


def _window_hashes(run: Any) -> Any:
    """Hashes of the windows of ``STREAM_WINDOW`` consecutive tokens of ``run`` that hold enough different tokens."""
    import numpy as np

    if len(run) < STREAM_WINDOW:
        return np.zeros(0, dtype=np.uint64)
    windows = np.lib.stride_tricks.sliding_window_view(np.ascontiguousarray(run, dtype=np.int64), STREAM_WINDOW)
    ordered = np.sort(windows, axis=1)
    distinct = 1 + (np.diff(ordered, axis=1) != 0).sum(axis=1)
    steps = np.diff(windows, axis=1)
    sorted_run = (steps >= 0).all(axis=1) | (steps <= 0).all(axis=1)  # ids in order (a sorted column) are no text
    # a window whose steps take few values (counting by a stride, a cycle) is fixed by where it starts: no text
    ordered_steps = np.sort(steps, axis=1)
    step_kinds = 1 + (np.diff(ordered_steps, axis=1) != 0).sum(axis=1)
    kept = windows[(distinct >= STREAM_MIN_DISTINCT) & (step_kinds >= STREAM_MIN_DISTINCT) & ~sorted_run]
    return row_hashes(np.ascontiguousarray(kept)) if len(kept) else np.zeros(0, dtype=np.uint64)


def _whole_sample_matches(a: SplitData, b: SplitData) -> tuple[Any, Any, int] | None:
    """``(indices into b, matching indices into a, samples of b)`` for the samples of ``b`` equal, part for part, to
    a sample of ``a``, when both splits know their samples' parts (``SplitData.parts``) alike (same count, and each
    part the same row shape and dtype kind); None when they do not, or when every part is one integer per sample
    (ids and class numbers: a small space where equal tuples are no evidence)."""
    import numpy as np

    if a.parts is None or b.parts is None or len(a.parts) != len(b.parts) or not a.parts:
        return None
    parts_a, parts_b = [], []
    for part_a, part_b in zip(a.parts, b.parts, strict=True):
        pa, pb = np.asarray(part_a), np.asarray(part_b)
        if pa.shape[1:] != pb.shape[1:] or pa.dtype.kind == "O" or pb.dtype.kind == "O":
            return None
        if pa.dtype != pb.dtype:
            if pa.dtype.kind not in "biuf" or pb.dtype.kind not in "biuf":
                return None
            common = np.result_type(pa.dtype, pb.dtype)
            pa, pb = pa.astype(common), pb.astype(common)
        parts_a.append(pa)
        parts_b.append(pb)
    if all(p.ndim == 1 and p.dtype.kind in "biu" for p in parts_a):
        return None
    total = len(parts_b[0])
    if any(len(p) != len(parts_a[0]) for p in parts_a) or any(len(p) != total for p in parts_b):
        return None
    idx_b, idx_a = _match_keys(_combined_hashes(parts_a), _combined_hashes(parts_b))
    keep = np.ones(len(idx_b), dtype=bool)
    varied = np.zeros(len(idx_b), dtype=bool)
    multi = False
    for pa, pb in zip(parts_a, parts_b, strict=True):
        if not len(idx_b):
            break
        bytes_a, bytes_b = _row_bytes(pa), _row_bytes(pb)
        for start in range(0, len(idx_b), 65536):  # bounded temporaries on wide rows
            stop = start + 65536
            keep[start:stop] &= (bytes_a[idx_a[start:stop]] == bytes_b[idx_b[start:stop]]).all(axis=1)
        matched = pb[idx_b].reshape(len(idx_b), -1)
        if matched.shape[1] >= 2 and matched.dtype.kind in "biuf":
            multi = True
            varied |= (matched != matched[:, :1]).any(axis=1)
    if multi:
        keep &= varied  # a sample whose every part is one value repeated (padding) is no sample
    return idx_b[keep], idx_a[keep], total


def _combined_hashes(parts: list[Any]) -> Any:
    """One uint64 hash per sample over all its parts (each part's row hash, mixed in order)."""
    import numpy as np

    combined = np.full(len(parts[0]), np.uint64(_SEED), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for part in parts:
            combined ^= row_hashes(part)
            combined *= np.uint64(_PRIME)
            combined ^= combined >> np.uint64(29)
    return combined


def _without_constant_rows(rows: Any, idx_rows: Any, idx_other: Any) -> tuple[Any, Any]:
    """The matches whose row of ``rows`` holds more than one distinct value: a row that is one value repeated (the
    padding rows that end a batchified token stream, an all-zero mask) is no sample, and two splits padded the same
    way share it without sharing any data."""
    import numpy as np

    if not len(idx_rows):
        return idx_rows, idx_other
    matched = np.asarray(rows)[idx_rows].reshape(len(idx_rows), -1)
    if matched.shape[1] < 2 or matched.dtype.kind not in "biuf":
        return idx_rows, idx_other
    varied = (matched != matched[:, :1]).any(axis=1)
    return idx_rows[varied], idx_other[varied]


def check_temporal(train: SplitData, other: SplitData) -> LeakageIssue | None:
    """``other`` samples dated before the latest training sample (a random split of time-ordered data)."""
    import numpy as np

    if train.times is None or other.times is None or len(train.times) == 0 or len(other.times) == 0:
        return None
    t_train, t_other = np.asarray(train.times), np.asarray(other.times)
    if (
        t_train.dtype.kind not in "iufM"
        or t_other.dtype.kind not in "iufM"
        or (t_train.dtype.kind == "M") != (t_other.dtype.kind == "M")
    ):
        return None
    latest = t_train.max()
    earlier = int((t_other < latest).sum())
    if not earlier:
        return None
    return LeakageIssue(
        "temporal",
        "warning",
        t(
            "{share} {other} samples are dated before the latest {train} sample "
            "({latest}): the model trains on the future of what it is evaluated on; split by time instead",
            share=_share(earlier, len(t_other)),
            other=other.name,
            train=train.name,
            latest=_plain(latest),
        ),
        (train.name, other.name),
        earlier,
        len(t_other),
        (str(_plain(t_other.min())), str(_plain(latest))),
    )


def _as_codes(values: Any) -> tuple[Any, int]:
    import numpy as np

    uniques, codes = np.unique(values, return_inverse=True)
    return codes.reshape(-1), len(uniques)


def check_label_columns(split: SplitData) -> list[LeakageIssue]:
    """Feature columns that copy the label, are an exact linear function of it, or determine it value by value."""
    import numpy as np

    if split.labels is None:
        return []
    labels = np.asarray(split.labels)
    n = len(labels)
    if labels.size != n:
        return []  # multi-output labels: no single label column to compare with
    labels = labels.reshape(n)
    if split.columns is not None:
        columns = {k: np.asarray(v) for k, v in split.columns.items() if len(v) == n}
    elif split.rows is not None and len(split.rows) == n:
        rows = np.asarray(split.rows)
        if rows.dtype.kind not in "biuf" or rows.ndim < 2:
            return []
        flat = rows.reshape(n, -1)
        if flat.shape[1] > MAX_LABEL_COLUMNS:
            return []  # images, sequences: a column-by-column label check is not meaningful
        columns = {t("column {0}", j): flat[:, j] for j in range(flat.shape[1])}
    else:
        return []
    if n < 30 or not columns:
        return []
    step = max(1, -(-n // LABEL_SAMPLE_ROWS))
    y_sample = labels[::step]
    numeric_y = labels.dtype.kind in "biuf"
    try:
        y_codes, y_classes = _as_codes(y_sample)
    except TypeError:
        return []
    if y_classes < 2:
        return []
    issues: list[LeakageIssue] = []
    y_float = y_sample.astype(np.float64) if numeric_y else None
    for name, column in columns.items():
        sample = column[::step]
        numeric_x = column.dtype.kind in "biuf"
        if numeric_x and y_float is not None:
            identical = bool(np.array_equal(sample.astype(np.float64), y_float)) and bool(
                np.array_equal(column.astype(np.float64), labels.astype(np.float64))
            )
        else:
            identical = sample.dtype == y_sample.dtype and bool(np.array_equal(sample, y_sample))
            identical = identical and bool(np.array_equal(column, labels))
        if identical:
            issues.append(
                LeakageIssue(
                    "label-copy",
                    "error",
                    t("feature {0} of {1} is identical to the label: the model can read the answer", name, split.name),
                    (split.name,),
                    n,
                    n,
                    column=name,
                )
            )
            continue
        if numeric_x and numeric_y and y_float is not None:
            x = sample.astype(np.float64)
            if np.isfinite(x).all() and x.std() > 0 and y_float.std() > 0:
                r = float(np.corrcoef(x, y_float)[0, 1])
                if abs(r) >= 0.9999:
                    issues.append(
                        LeakageIssue(
                            "label-linear",
                            "error",
                            t(
                                "feature {0} of {1} is an exact linear function of the label "
                                "(correlation {2}): it was probably computed from the label",
                                name,
                                split.name,
                                f"{r:+.5f}",
                            ),
                            (split.name,),
                            n,
                            n,
                            column=name,
                        )
                    )
                    continue
        try:
            x_codes, x_values = _as_codes(sample)
        except TypeError:
            continue
        if x_values < 2 or len(sample) < 3 * x_values:
            continue  # an id-like column "predicts" anything; require each value to repeat
        pairs = np.unique(x_codes.astype(np.int64) * y_classes + y_codes).size
        if pairs == x_values:
            issues.append(
                LeakageIssue(
                    "label-predictor",
                    "warning",
                    t(
                        "feature {0} of {1} determines the label: each of its {2} values always "
                        "comes with the same label (a proxy of the target?)",
                        name,
                        split.name,
                        x_values,
                    ),
                    (split.name,),
                    len(sample),
                    len(sample),
                    column=name,
                )
            )
    return issues


def check_splits(splits: Mapping[str, SplitData], budget_seconds: float = 10.0) -> LeakageReport:
    """Run every check on every pair of splits (train/val/test order), within ``budget_seconds``."""
    start = time.perf_counter()
    report = LeakageReport()
    ordered = sorted(splits.items(), key=lambda kv: (SPLIT_ORDER.index(kv[0]) if kv[0] in SPLIT_ORDER else 9, kv[0]))
    prepared = [(key, _cap(split)) for key, split in ordered]
    for _, split in prepared:
        report.rows[split.name] = split.total_rows or split.size()
        report.notes.extend(split.notes)
    pairs = [(prepared[i], prepared[j]) for i in range(len(prepared)) for j in range(i + 1, len(prepared))]

    def within_budget(what: str) -> bool:
        if time.perf_counter() - start <= budget_seconds:
            return True
        report.notes.append(f"skipped {what}: over the {budget_seconds:g} s budget")
        return False

    checks: list[tuple[str, Callable[[SplitData, SplitData], LeakageIssue | None]]] = [
        ("id overlap", check_id_overlap),
        ("temporal order", check_temporal),
        ("duplicates", check_duplicates),
        ("stream overlap", check_stream_overlap),
    ]
    overlapping_rows: set[tuple[str, str]] = set()
    for label, check in checks:
        for (_, a), (_, b) in pairs:
            if check is check_duplicates and (a.name, b.name) in overlapping_rows:
                continue  # the same rows of one array: their equal content is the overlap already reported
            if not within_budget(f"{label} {a.name}/{b.name}"):
                continue
            issue = check(a, b)
            if issue is not None:
                report.issues.append(issue)
                if check is check_id_overlap and positional_overlap(a, b):
                    overlapping_rows.add((a.name, b.name))
    if prepared and within_budget("label checks"):
        train = next((s for k, s in prepared if k == "train" and s.labels is not None), None)
        target = train or next((s for _, s in prepared if s.labels is not None), None)
        if target is not None:
            report.issues.extend(check_label_columns(target))
    report.seconds = time.perf_counter() - start
    return report
