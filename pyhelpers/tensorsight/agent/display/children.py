"""What an expanded tensor, array, module, optimizer, data loader or record lists in the Variables view: curated rows
first (stats, memory, grad, mode...), then values by rows and the unfiltered attributes, each built only when expanded.

Called by the pydevd plugin (``child_entries``, ``children``, ``resolve_child``), under the request clock of
``display.budget``; nothing raises out of it.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import keyword
import sys
from collections.abc import Callable
from typing import Any

from tensorsight.agent.display.budget import CLOCK
from tensorsight.agent.display.kinds import kind_of
from tensorsight.agent.display.module_scan import module_facts
from tensorsight.agent.display.reading import Entry, Group, Info, quiet_torch, safe_stats, short_error
from tensorsight.agent.display.training_objects import length_of, loader_facts, optimizer_facts
from tensorsight.agent.runtime.guard import report_once
from tensorsight.core.notation import format_bytes, shape_text
from tensorsight.core.summary import ModuleFacts, format_count, format_number

MAX_MODULE_MEMBERS = 500  # children listed when a module is expanded (pydevd lists 500 items of a container)
VALUE_ROWS = 8  # rows (or 10-element slices) listed under "values"
VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "real", "imag"})  # each builds a new tensor/array: not evaluated
SKIPPED_ATTRIBUTES = frozenset({"volatile"})  # removed from torch: reading it only emits a warning


def children(value: Any) -> dict[str, Any]:
    """Curated children by name, in display order (pydevd's ``get_dictionary``)."""
    return {name: child for name, child, _ in child_entries(value)}


def resolve_child(value: Any, key: str) -> Any:
    """One child by name (pydevd's ``resolve``); None when there is no such child."""
    for name, child, _ in child_entries(value):
        if name == key:
            return child
    return None


def child_entries(value: Any) -> list[Entry]:
    """``(name, value, evaluate-name suffix)`` triples in display order; never raises."""
    kind = kind_of(value)
    try:
        with CLOCK.call(), quiet_torch():
            return _child_entries(value, kind)
    except Exception as exc:  # noqa: BLE001
        report_once(f"children-{type(value).__name__}", f"could not list children of a {type(value).__name__}: {exc!r}")
        return [("error", Info(f"TensorSight could not list children: {short_error(exc)}"), None)]


def _child_entries(value: Any, kind: str | None) -> list[Entry]:
    if kind == "group":
        return list(value.entries())
    if kind == "record":
        return _record_children(value)
    if kind == "tensor":
        return _tensor_children(value)
    if kind == "array":
        return _array_children(value)
    if kind == "module":
        return _module_children(value)
    if kind == "optimizer":
        return _optimizer_children(value)
    if kind == "loader":
        return _loader_children(value)
    return []


def _stats_group(value: Any) -> Group:
    stats = safe_stats(value, glance=False)  # the rest of what the line left out: the value's whole budget
    if stats.has_values and stats.finite:
        approx = "" if stats.exact else "≈"
        label = (
            f"min={format_number(stats.min)} max={format_number(stats.max)} mean{approx}={format_number(stats.mean)}"
        )
        if stats.std is not None:
            label += f" std{approx}={format_number(stats.std)}"
    elif stats.has_values:
        label = "no finite values" if stats.numel else "empty"
    else:
        label = stats.note or "no values"
    return Group(label, lambda: _stats_entries(value))


def _stats_entries(value: Any) -> list[Entry]:
    stats = safe_stats(value, zeros=True, glance=False)
    if not stats.has_values:
        return [("note", Info(stats.note or "no values"), None)]
    missing = Info("n/a (no finite values)")

    def figure(x: Any) -> Any:
        return missing if x is None else x

    entries: list[Entry] = [
        ("min", figure(stats.min), None),
        ("max", figure(stats.max), None),
        ("mean", figure(stats.mean), None),
        ("std", figure(stats.std), None),
        ("nan", stats.nan, None),
        ("+inf" if stats.inf_signed else "inf", stats.posinf, None),
    ]
    if stats.inf_signed:
        entries.append(("-inf", stats.neginf, None))
    entries += [
        ("zeros", stats.zeros if stats.zeros is not None else Info("not counted"), None),
        ("finite", stats.finite, None),
        ("sum", figure(stats.total), None),
        ("norm", figure(stats.norm), None),
    ]
    if stats.exact:
        entries.append(("exact", True, None))
    else:
        entries.append(("exact", Info(f"no: estimated from {format_count(stats.counted)} sampled elements"), None))
    return entries


def _tensor_memory(t: Any) -> Info:
    logical = int(t.numel()) * int(t.element_size())
    text = format_bytes(logical)
    try:
        stored = int(t.untyped_storage().nbytes())
    except Exception:  # noqa: BLE001 - sparse/meta/wrapper tensors have no plain storage
        return Info(text)
    if t.layout == sys.modules["torch"].strided:
        text += ", contiguous" if t.is_contiguous() else f", strides {tuple(t.stride())}"
    if stored > logical:
        text += f", a view into {format_bytes(stored)} of storage"
    elif stored < logical:
        text += f", {format_bytes(stored)} stored (expanded)"
    return Info(text)


def _tensor_children(t: Any) -> list[Entry]:
    torch = sys.modules["torch"]
    with quiet_torch():
        entries: list[Entry] = [
            ("shape", _try(lambda: t.shape), ".shape"),
            ("dtype", t.dtype, ".dtype"),
            ("device", t.device, ".device"),
        ]
        has_shape = not isinstance(_try(lambda: tuple(t.shape)), Info)
        if has_shape:
            entries.append(("stats", _stats_group(t), None))
        entries.append(("memory", _try(lambda: _tensor_memory(t)), None))
        entries.append(("requires_grad", bool(t.requires_grad), ".requires_grad"))
        if t.is_leaf or t.retains_grad:
            entries.append(("grad", t.grad, ".grad"))
        else:
            entries.append(("grad", Info("not kept for a non-leaf tensor (call .retain_grad() before backward)"), None))
        entries.append(("grad_fn", t.grad_fn, ".grad_fn"))
        entries.append(("is_leaf", bool(t.is_leaf), ".is_leaf"))
        readable = has_shape and safe_stats(t).has_values  # no data (meta, fake, raising subclass): no value rows
        if readable and t.layout == torch.strided and t.dim() > 0 and t.numel() > 0:
            entries.append(("values", _values_group(t, lambda: t.detach()), ""))
        entries.append(("raw attributes", _raw_group(t, tensor=True), ""))
    return entries


def _array_children(a: Any) -> list[Entry]:
    entries: list[Entry] = [
        ("shape", a.shape, ".shape"),
        ("dtype", a.dtype, ".dtype"),
        ("stats", _stats_group(a), None),
    ]
    memory = format_bytes(int(a.nbytes))
    memory += ", contiguous" if a.flags.c_contiguous else f", strides {a.strides}"
    if a.base is not None:
        memory += ", a view"
    entries.append(("memory", Info(memory), None))
    if a.ndim > 0 and a.size > 0:
        entries.append(("values", _values_group(a, lambda: a), ""))
    entries.append(("raw attributes", _raw_group(a), ""))
    return entries


def _values_group(value: Any, view: Callable[[], Any]) -> Group:
    """Rows (or 10-element slices of a 1-D value), taken as views only when the group is expanded."""
    length = int(value.shape[0])
    one_dim = len(value.shape) == 1

    def build() -> list[Entry]:
        with quiet_torch():
            data = view()
            entries: list[Entry] = []
            if one_dim:
                starts = list(range(0, min(length, 10 * VALUE_ROWS), 10))
                if starts and starts[-1] + 10 < length:
                    starts.append(max(starts[-1] + 10, length - 10))
                for start in starts:
                    stop = min(start + 10, length)
                    entries.append((f"[{start}:{stop}]", data[start:stop], f"[{start}:{stop}]"))
                return entries
            rows = list(range(min(length, VALUE_ROWS)))
            if length > VALUE_ROWS:
                rows.append(length - 1)
            return [(f"[{row}]", data[row], f"[{row}]") for row in rows]

    label = f"{length} elements in slices of 10" if one_dim else f"{length} rows along dim 0"
    return Group(label, build)


def _raw_group(value: Any, tensor: bool = False) -> Group:
    """Every data attribute, as stock debugpy lists them, minus the methods; copies are placeholders."""

    def build() -> list[Entry]:
        with quiet_torch():
            return _raw_attributes(value, tensor)

    return Group("all attributes (unfiltered)", build)


def _raw_attributes(value: Any, tensor: bool) -> list[Entry]:
    names = set(dir(type(value)))
    with contextlib.suppress(Exception):
        names |= set(vars(value))
    non_leaf = False
    if tensor:
        with contextlib.suppress(Exception):
            non_leaf = not (value.is_leaf or value.retains_grad)
    entries: list[Entry] = []
    for name in sorted(names):
        if name.startswith("__") or name in SKIPPED_ATTRIBUTES:
            continue
        try:
            static = inspect.getattr_static(value, name)
        except AttributeError:
            continue
        if _is_method(static):
            continue
        suffix = _attribute_suffix(name)
        if name in VIEW_ATTRIBUTES:
            child: Any = Info(f"not evaluated: .{name} builds a new tensor from the data (evaluate it to see it)")
        elif tensor and non_leaf and name in ("grad", "_grad"):
            child = Info("None (not kept for a non-leaf tensor)")
        else:
            try:
                child = getattr(value, name)
            except Exception as exc:  # noqa: BLE001
                child = Info(f"raises {short_error(exc)}")
        entries.append((name, child, suffix))
    return entries


def _is_method(static: Any) -> bool:
    if isinstance(static, (staticmethod, classmethod)):
        return True
    return inspect.isroutine(static) or type(static).__name__ in ("method_descriptor", "wrapper_descriptor")


def _attribute_suffix(name: str) -> str | None:
    return f".{name}" if name.isidentifier() and not keyword.iskeyword(name) else None


def _try(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001
        return Info(f"raises {short_error(exc)}")


def _grad_norm_shown(facts: ModuleFacts) -> float | Info:
    """The module's ``(grad norm)`` row: a number, or why there is none, in words that never mistake "no backward
    yet" for NaN gradients (``tensorsight.grad_norm`` answers ``inf`` for the latter and no number for the former)."""
    if facts.nonfinite_grads:
        count = len(facts.nonfinite_grads)
        return Info(f"inf (NaN/Inf in {count} grad{'s' if count > 1 else ''})")
    if facts.grad_norm is not None:
        return facts.grad_norm
    if facts.note is not None:
        return Info("not computed (too many parameters)")
    return Info("no grads yet" if facts.trainable else "no trainable params")


def _module_children(module: Any) -> list[Entry]:
    facts = module_facts(module, glance=False)
    entries: list[Entry] = [
        ("(params)", facts.params, None),
        ("(trainable)", facts.trainable, None),
        ("(mode)", Info("train" if facts.training else "eval"), ".training"),
        ("(devices)", Info(", ".join(facts.devices) or "none"), None),
        ("(dtypes)", Info(", ".join(facts.dtypes) or "none"), None),
        ("(grad norm)", _grad_norm_shown(facts), None),
    ]
    if facts.nonfinite_params or facts.nonfinite_grads:
        bad = [*facts.nonfinite_params, *(f"{n}.grad" for n in facts.nonfinite_grads)]
        entries.append(("(NaN/Inf)", Info(", ".join(bad)), None))
    if facts.scanned is not None:
        done, total = facts.scanned
        note = f"{done:,} of {total:,} tensors scanned for NaN/Inf so far: the next view goes on from there"
        entries.append(("(scan)", Info(note), None))
    indexable = _is_indexable_container(module)
    members: list[Entry] = []
    for name, child in module.named_children():
        members.append((name, child, f"[{name}]" if indexable and name.isdigit() else _module_suffix(module, name)))
    for name, p in module.named_parameters(recurse=False):
        members.append((name, p, _attribute_suffix(name)))
    for name, b in module.named_buffers(recurse=False):
        members.append((name, b, _attribute_suffix(name)))
    entries += members[:MAX_MODULE_MEMBERS]
    if len(members) > MAX_MODULE_MEMBERS:
        rest = len(members) - MAX_MODULE_MEMBERS
        entries.append(
            ("(more)", Info(f"… {rest:,} more submodules/parameters/buffers: evaluate them by name to see one"), None)
        )
    entries.append(("raw attributes", _raw_group(module), ""))
    return entries


def _is_indexable_container(module: Any) -> bool:
    nn = sys.modules.get("torch.nn")
    return nn is not None and isinstance(module, (nn.Sequential, nn.ModuleList))


def _module_suffix(module: Any, name: str) -> str | None:
    nn = sys.modules.get("torch.nn")
    if nn is not None and isinstance(module, nn.ModuleDict):
        return f"[{name!r}]"
    return _attribute_suffix(name)


def _optimizer_children(optimizer: Any) -> list[Entry]:
    facts = optimizer_facts(optimizer)
    lrs = [group.get("lr") for group in facts.groups]
    entries: list[Entry] = [
        ("(lr)", lrs[0] if len(lrs) == 1 else lrs, None),
        ("(step)", facts.step if facts.step is not None else Info("unknown (this optimizer keeps no step)"), None),
        ("(tensors)", facts.tensors, None),
        ("(state)", Info(f"{length_of(optimizer.state)} tensors with state"), None),
        ("param_groups", optimizer.param_groups, ".param_groups"),
        ("defaults", optimizer.defaults, ".defaults"),
        ("raw attributes", _raw_group(optimizer), ""),
    ]
    return entries


def _record_children(record: Any) -> list[Entry]:
    """The rows of one of our own records (``__tensorsight_rows__``: name, value), a tuple of tensors as one row that
    names their shapes and expands to them, instead of the tuple's repr with every value printed."""
    entries: list[Entry] = []
    for name, value in record.__tensorsight_rows__():
        if isinstance(value, tuple) and value and all(kind_of(v) in ("tensor", "array") for v in value):
            shapes = ", ".join(_type_at_a_glance(v) for v in value[:4])
            noun = "tensor" if all(kind_of(v) == "tensor" for v in value) else "array"
            label = f"{len(value)} {noun}{'s' if len(value) != 1 else ''}: {shapes}{', …' if len(value) > 4 else ''}"
            entries.append((name, Group(label, functools.partial(_tuple_entries, value, f".{name}")), None))
        else:
            entries.append((name, value, f".{name}"))
    return entries


def _type_at_a_glance(value: Any) -> str:
    """``f32[64, 8]``: the dtype and shape of a tensor or array, read without its values."""
    return shape_text(tuple(value.shape), value.dtype)


def _tuple_entries(values: tuple[Any, ...], suffix: str) -> list[Entry]:
    return [(str(index), value, f"{suffix}[{index}]") for index, value in enumerate(values)]


def _loader_children(loader: Any) -> list[Entry]:
    facts = loader_facts(loader)
    shuffle: Any = facts.shuffle if facts.shuffle is not None else Info(f"unknown (sampler {facts.sampler})")
    workers: Any = facts.num_workers
    if facts.num_workers == 0:
        workers = Info("0 (batches load in the main process: a likely bottleneck)")
    entries: list[Entry] = [
        ("batch_size", loader.batch_size, ".batch_size"),
        ("num_workers", workers, ".num_workers"),
        ("shuffle", shuffle, None),
        ("drop_last", bool(loader.drop_last), ".drop_last"),
        ("pin_memory", bool(loader.pin_memory), ".pin_memory"),
        ("(samples)", facts.dataset_len if facts.dataset_len is not None else Info("unknown (no len)"), None),
        ("(batches)", facts.batches if facts.batches is not None else Info("unknown"), None),
        ("dataset", loader.dataset, ".dataset"),
        ("sampler", loader.sampler, ".sampler"),
        ("batch_sampler", loader.batch_sampler, ".batch_sampler"),
        ("collate_fn", loader.collate_fn, ".collate_fn"),
        ("raw attributes", _raw_group(loader), ""),
    ]
    return entries
