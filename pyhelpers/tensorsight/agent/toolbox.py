"""The lesson's debugging toolbox as a small library: ``import tensorsight`` and call the tool you need.

- ``debug_print(x)`` / ``debug_print("name", x)``: one summary line (shape, dtype, device, stats, NaN/Inf) per value;
- ``check_shapes(model, batch)``: the shape map of one forward (module tree, input/output shapes, dtype, parameters,
  memory), printed as a table and returned as rows;
- ``detect_nan(x)`` and ``invalid_values(x)`` (Spanish ``valores_invalidos``): NaN/±Inf counts in a tensor, array,
  module (weights and gradients) or container;
- ``check_data_leakage(train, test, val=None)`` (Spanish ``fuga_de_datos``): id overlap, duplicates across splits,
  label-copy features, temporal order;
- ``check_devices(model, *tensors)``: parameters and inputs on the wrong device;
- ``Timer``/``Cronometro``, ``setup_logging``, ``memory_top``, ``overfit_one_batch`` live with the measurement
  features (``tensorsight.agent.measurement.timer``...) and are reachable from here too.

Every tool reads its inputs and never changes them (no in-place writes, no autograd graph, the model's train/eval
mode and the global RNG restored), prints a short report, returns the data, and explains bad input in one sentence
instead of a traceback. The demo (``python -m tensorsight demo``) runs each tool; the README shows their output.
"""

from __future__ import annotations

import ast
import importlib
import linecache
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from tensorsight.agent.runtime.user_code import user_location
from tensorsight.agent.runtime.user_libs import is_array, is_module, is_tensor, loaded_torch
from tensorsight.core.devices import DeviceIssue, device_issues
from tensorsight.core.findings import Finding
from tensorsight.core.nonfinite import NonFiniteCounts, nonfinite_counts
from tensorsight.core.notation import shape_text
from tensorsight.core.shapes import ShapeRow, format_shape_table

# names implemented by the measurement features, re-exported lazily so ``tensorsight.agent.toolbox.Timer`` works too
_ELSEWHERE = {
    "Timer": "tensorsight.agent.measurement.timer",
    "Cronometro": "tensorsight.agent.measurement.timer",
    "setup_logging": "tensorsight.agent.measurement.training_log",
    "memory_top": "tensorsight.agent.measurement.memory",
    "overfit_one_batch": "tensorsight.agent.measurement.overfit",
    "summarize": "tensorsight.agent.display.presentation",
}

__all__ = [
    "ShapeReport",
    "check_data_leakage",
    "check_devices",
    "check_shapes",
    "debug_print",
    "detect_nan",
    "fuga_de_datos",
    "invalid_values",
    "valores_invalidos",
]


def __getattr__(name: str) -> Any:
    module_name = _ELSEWHERE.get(name)
    if module_name is None:
        raise AttributeError(f"module 'tensorsight.agent.toolbox' has no attribute {name!r}")
    return getattr(importlib.import_module(module_name), name)


def _caller_argument_names(depth: int = 2) -> list[str]:
    """The source text of the arguments in the caller's call (``check_devices(model, xb, yb)`` -> model, xb, yb)."""
    try:
        frame = sys._getframe(depth)
        text = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
        call = next(n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call))
        return [ast.unparse(arg) for arg in call.args]
    except Exception:  # noqa: BLE001 - multi-line calls, the REPL, odd source: fall back to positions
        return []


def _where() -> str:
    location = user_location(sys._getframe(2))
    if location is None:
        return ""
    return f"{os.path.basename(location[0])}:{location[1]} "


# ---- debug_print ---------------------------------------------------------------------------------------------------


def _fallback_summary(value: Any) -> str:
    """A summary line when the presentation feature is not available: shape, device and exact NaN/Inf counts."""
    if is_tensor(value):
        text = f"{shape_text(tuple(value.shape), value.dtype)} {value.device}"
        counts = nonfinite_counts(value)
        if counts:
            text += f" ⚠ NaN×{counts.nan} +Inf×{counts.posinf} -Inf×{counts.neginf}"
        elif (
            value.numel()
            and (value.is_floating_point() or value.dtype == loaded_torch().int64)
            and value.device.type != "meta"
        ):
            with loaded_torch().no_grad():
                flat = value.detach().reshape(-1)[:: max(1, value.numel() // 1_000_000)].double()
                text += f" mean={flat.mean().item():.4g} min={flat.min().item():.4g} max={flat.max().item():.4g}"
        if value.requires_grad:
            text += " grad"
        return text
    if is_array(value):
        text = shape_text(value.shape, value.dtype) + " ndarray"
        counts = nonfinite_counts(value)
        if counts:
            text += f" ⚠ NaN×{counts.nan} +Inf×{counts.posinf} -Inf×{counts.neginf}"
        elif value.size and value.dtype.kind in "iuf":
            sample = value.reshape(-1)[:: max(1, value.size // 1_000_000)]
            text += f" mean={sample.mean():.4g} min={sample.min():.4g} max={sample.max():.4g}"
        return text
    if is_module(value):
        params = sum(p.numel() for p in value.parameters())
        devices = sorted({str(p.device) for p in value.parameters()}) or ["no parameters"]
        mode = "train" if value.training else "eval"
        return f"{type(value).__name__} {params:,} params on {', '.join(devices)} ({mode})"
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def _summary(value: Any) -> str:
    try:
        from tensorsight.agent.display.presentation import summarize  # type: ignore[attr-defined,unused-ignore]

        text = summarize(value)
        if isinstance(text, str) and text:
            return text
    except Exception:  # noqa: BLE001 - presentation not shipped or failed: the fallback line still informs
        pass
    return _fallback_summary(value)


def debug_print(*values: Any, file: Any = None, **named: Any) -> str:
    """Print one summary line per value and return the text.

    ``debug_print(x)``, ``debug_print("logits", x)`` or ``debug_print(logits=x, target=y)``; names default to the
    argument's source text. Containers (dict/list/tuple) print one line per item (at most 20).
    """
    items: list[tuple[str, Any]] = []
    if len(values) == 2 and isinstance(values[0], str) and not isinstance(values[1], str):
        items.append((values[0], values[1]))
    else:
        names = _caller_argument_names()
        for i, value in enumerate(values):
            items.append((names[i] if i < len(names) and names[i] else f"value {i}", value))
    items.extend(named.items())
    lines = []
    where = _where()
    for name, value in items:
        if isinstance(value, Mapping) and not is_tensor(value):
            children = list(value.items())[:20]
            lines.append(f"[debug] {where}{name}: {type(value).__name__} of {len(value)}")
            lines.extend(f"[debug]   {name}[{k!r}]: {_summary(v)}" for k, v in children)
        elif isinstance(value, (list, tuple)) and any(is_tensor(v) or is_array(v) for v in value[:20]):
            lines.append(f"[debug] {where}{name}: {type(value).__name__} of {len(value)}")
            lines.extend(f"[debug]   {name}[{i}]: {_summary(v)}" for i, v in enumerate(value[:20]))
        else:
            lines.append(f"[debug] {where}{name}: {_summary(value)}")
    text = "\n".join(lines)
    print(text, file=file or sys.stdout)
    return text


# ---- check_shapes --------------------------------------------------------------------------------------------------


class ShapeReport(list[ShapeRow]):
    """The rows of a shape map (a list of ``ShapeRow``), with the printed ``table`` and the ``error``, if any."""

    table: str = ""
    error: str | None = None
    finding: Finding | None = None

    def __str__(self) -> str:
        return self.table


def check_shapes(model: Any, sample: Any, *, print_table: bool = True, file: Any = None) -> ShapeReport:
    """Run ``model`` once on ``sample`` and map every module's input/output shapes, dtype, parameters and memory.

    ``sample`` is what the model takes: a tensor, a tuple of positional inputs, or a dict of keyword inputs. The run
    is read-only: eval mode (no BatchNorm statistics update, no dropout draw), no autograd graph, the global RNG
    forked and restored, and the model's train/eval flags put back. A shape error does not raise: the rows up to
    the failing module are returned with ``error`` and the explanation (module path, operands, fix).
    """
    torch = loaded_torch()
    if torch is None or not is_module(model):
        raise TypeError(f"check_shapes expects a torch.nn.Module and a sample batch, got {type(model).__name__}")
    from tensorsight.agent.shapes.shape_map import ShapeMapRecorder

    recorder = ShapeMapRecorder(model)
    handles = []
    for module in model.modules():
        handles.append(module.register_forward_pre_hook(lambda m, args: recorder.before(m, args)))
        handles.append(module.register_forward_hook(lambda m, args, out: recorder.after(m, out)))
    flags = {id(m): m.training for m in model.modules()}
    report = ShapeReport()
    try:
        model.eval()
        devices = [torch.cuda.current_device()] if torch.cuda.is_initialized() else []
        with torch.random.fork_rng(devices=devices), torch.no_grad():
            if isinstance(sample, Mapping):
                model(**sample)
            elif isinstance(sample, tuple):
                model(*sample)
            else:
                model(sample)
    except Exception as exc:  # noqa: BLE001 - a shape error is the tool's answer, not a crash
        from tensorsight.agent.shapes.shape_errors import describe_error

        described = describe_error(exc)
        report.error = described[1] if described else f"{type(exc).__name__}: {exc}"
        where = user_location(sys._getframe(1))
        if described is not None and where is not None:  # the traceback stops here: point at the caller's line
            kind, message, details = described
            report.finding = Finding(kind, "error", message, where[0], where[1], details=details)
    finally:
        for handle in handles:
            handle.remove()
        for m in model.modules():
            m.training = flags.get(id(m), m.training)
    report.extend(recorder.finish())
    report.table = format_shape_table(report, title=f"Shape map of {type(model).__name__}")
    if report.error:
        report.table += f"\nThe forward failed: {report.error}"
    if print_table:
        print(report.table, file=file or sys.stdout)
    return report


# ---- NaN / Inf -----------------------------------------------------------------------------------------------------


def _named_tensors(value: Any, name: str) -> list[tuple[str, Any]]:
    """Tensors/arrays in ``value``: itself, a module's weights and gradients, or a container's items (bounded)."""
    if is_tensor(value) or is_array(value):
        return [(name, value)]
    if is_module(value):
        out: list[tuple[str, Any]] = []
        for pname, p in value.named_parameters():
            out.append((f"{name}.{pname}", p))
            if p.grad is not None:
                out.append((f"{name}.{pname}.grad", p.grad))
        out.extend((f"{name}.{bname}", b) for bname, b in value.named_buffers())
        return out
    if isinstance(value, Mapping):
        found: list[tuple[str, Any]] = []
        for key, item in list(value.items())[:1000]:
            found.extend(_named_tensors(item, f"{name}[{key!r}]"))
        return found
    if isinstance(value, (list, tuple)):
        found = []
        for i, item in enumerate(value[:1000]):
            found.extend(_named_tensors(item, f"{name}[{i}]"))
        return found
    return []


def _counts_dict(counts: NonFiniteCounts | None, elements: int) -> dict[str, Any]:
    if counts is None:
        return {"nan": None, "posinf": None, "neginf": None, "total": None, "elements": elements, "fraction": None}
    total = counts.total
    return {
        "nan": counts.nan,
        "posinf": counts.posinf,
        "neginf": counts.neginf,
        "total": total,
        "elements": elements,
        "fraction": (total / elements) if elements else 0.0,
    }


def _elements(value: Any) -> int:
    return int(value.numel()) if is_tensor(value) else int(value.size)


def invalid_values(value: Any, name: str | None = None, *, quiet: bool = False) -> dict[str, dict[str, Any]]:
    """NaN, +Inf and -Inf counts per tensor in ``value`` (tensor, ndarray, module with its gradients, container).

    Returns ``{tensor name: {"nan", "posinf", "neginf", "total", "elements", "fraction"}}`` for every tensor checked
    (counts are None where they cannot be known, e.g. meta tensors) and prints the ones with invalid values.
    """
    label = name or (_caller_argument_names() or ["value"])[0]
    tensors = _named_tensors(value, label)
    if not tensors:
        raise TypeError(
            f"invalid_values expects a tensor, an ndarray, a module or a container of them, got {type(value).__name__}"
        )
    result = {tname: _counts_dict(nonfinite_counts(t), _elements(t)) for tname, t in tensors}
    if not quiet:
        bad = {k: v for k, v in result.items() if v["total"]}
        unknown = [k for k, v in result.items() if v["total"] is None]
        if bad:
            for tname, c in bad.items():
                print(
                    f"[invalid_values] {tname}: NaN×{c['nan']} +Inf×{c['posinf']} -Inf×{c['neginf']} "
                    f"({c['total']:,} of {c['elements']:,} elements, {100 * c['fraction']:.2f}%)"
                )
        else:
            print(f"[invalid_values] {label}: no NaN/Inf in {len(result)} tensor(s)")
        for tname in unknown:
            print(f"[invalid_values] {tname}: values unknown (no data on this device/layout)")
    return result


def detect_nan(value: Any, name: str | None = None, *, quiet: bool = False) -> bool:
    """True when ``value`` (tensor, ndarray, module incl. gradients, container) holds a NaN or ±Inf; prints where."""
    label = name or (_caller_argument_names() or ["value"])[0]
    counts = invalid_values(value, label, quiet=True)
    bad = {k: v for k, v in counts.items() if v["total"]}
    if not quiet:
        if bad:
            for tname, c in bad.items():
                print(f"[detect_nan] {tname}: NaN×{c['nan']} +Inf×{c['posinf']} -Inf×{c['neginf']}")
        else:
            print(f"[detect_nan] {label}: finite ({len(counts)} tensor(s) checked)")
    return bool(bad)


# ---- data leakage --------------------------------------------------------------------------------------------------


def _per_split(value: Any, count: int, what: str) -> list[Any]:
    if value is None:
        return [None] * count
    if isinstance(value, Mapping):
        keys = ("train", "test", "val")
        return [value.get(k) for k in keys[:count]]
    if isinstance(value, (list, tuple)) and len(value) in (2, 3) and len(value) >= count - 1:
        items = list(value) + [None] * (count - len(value))
        return items[:count]
    raise TypeError(f"{what} must be a tuple (train, test[, val]) or a dict by split name")


def check_data_leakage(
    train: Any,
    test: Any,
    val: Any = None,
    *,
    labels: Any = None,
    ids: Any = None,
    times: Any = None,
    label: str | None = None,
    id_column: str | None = None,
    time_column: str | None = None,
    budget_seconds: float = 30.0,
    quiet: bool = False,
) -> Any:
    """Look for leakage between train, test (and val): id overlap, duplicated samples, label-copy features, time order.

    Each split may be an array/tensor, a list, a pandas DataFrame, a ``(features, labels)`` tuple, a torch Dataset
    (TensorDataset, Subset, datasets with ``.data``/``.targets``; other datasets are read through ``__getitem__``,
    up to 100,000 items) or a DataLoader. ``labels``/``ids``/``times`` give per-split arrays as ``(train, test[,
    val])`` or ``{"train": ..., "test": ...}``; DataFrame columns are found by name (``id``, ``*_id``, ``label``,
    ``target``, datetime columns) or given with ``label=``/``id_column=``/``time_column=``. Returns a
    ``LeakageReport`` (truthy when leakage was found; ``.issues`` with counts and examples) and prints it.
    """
    from tensorsight.agent.leakage.splits import split_from_parts
    from tensorsight.core import leakage

    names = ["train", "test", "val"]
    objects = [train, test, val]
    count = 3 if val is not None else 2
    per = {
        "labels": _per_split(labels, count, "labels"),
        "ids": _per_split(ids, count, "ids"),
        "times": _per_split(times, count, "times"),
    }
    splits: dict[str, Any] = {}
    for i in range(count):
        splits[names[i]] = split_from_parts(
            names[i],
            objects[i],
            labels=per["labels"][i],
            ids=per["ids"][i],
            times=per["times"][i],
            allow_iteration=True,
            label=label,
            id_column=id_column,
            time_column=time_column,
        )
    readable = [s for s in splits.values() if s.size()]
    if len(readable) < 2 and not any(s.labels is not None for s in readable):
        raise TypeError(
            "check_data_leakage could not read samples from the splits given "
            f"({', '.join(type(o).__name__ for o in objects[:count])}): pass arrays, tensors, DataFrames or datasets"
        )
    report = leakage.check_splits(splits, budget_seconds=budget_seconds)
    if not quiet:
        print(report.format())
    return report


# ---- devices -------------------------------------------------------------------------------------------------------


def check_devices(model: Any, *tensors: Any, quiet: bool = False, **named: Any) -> list[DeviceIssue]:
    """Device problems of ``model`` and the tensors you feed it: split parameters, meta weights, inputs elsewhere.

    ``check_devices(model, xb, yb)`` or ``check_devices(model, batch=batch)``; nested tuples/lists/dicts of tensors
    are looked into. Returns the issues (empty when all is on one device) and prints a one-line verdict or each issue.
    """
    if not is_module(model):
        raise TypeError(f"check_devices expects a torch.nn.Module first, got {type(model).__name__}")
    arg_names = _caller_argument_names()[1:]
    model_tensors = {n: str(p.device) for n, p in model.named_parameters()}
    model_tensors.update({n: str(b.device) for n, b in model.named_buffers()})
    inputs: list[tuple[str, str]] = []
    named_values = [
        (arg_names[i] if i < len(arg_names) and arg_names[i] else f"tensor {i}", v) for i, v in enumerate(tensors)
    ]
    named_values.extend(named.items())
    for label, value in named_values:
        found = _named_tensors(value, label)
        if not found and value is not None:
            raise TypeError(f"check_devices: {label} is a {type(value).__name__}, not a tensor or a container of them")
        inputs.extend((tname, str(t.device)) for tname, t in found if is_tensor(t))
    model_name = (_caller_argument_names() or ["model"])[0]
    issues = device_issues(model_tensors, inputs, model_name=model_name)
    if not quiet:
        if issues:
            for issue in issues:
                print(f"[check_devices] {issue.severity}: {issue.message}")
        else:
            where = sorted(set(model_tensors.values()) | {d for _, d in inputs}) or ["(nothing on a device)"]
            print(f"[check_devices] ok: {model_name} and {len(inputs)} tensor(s) all on {', '.join(where)}")
    return issues


# ---- Spanish names the lesson uses ---------------------------------------------------------------------------------

fuga_de_datos = check_data_leakage
valores_invalidos = invalid_values


def rows_as_dicts(rows: Sequence[ShapeRow]) -> list[dict[str, Any]]:
    """JSON-able form of shape-map rows (the ``shapes --json`` CLI and the editor's table use it)."""
    return [row.to_dict() for row in rows]
