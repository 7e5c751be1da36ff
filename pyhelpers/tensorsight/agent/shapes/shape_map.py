"""Records the shape map of one model forward: per module, input/output shapes, dtype, parameters and memory.

Used by ``tensorsight.check_shapes`` (toolbox, per-module hooks on one sample batch), by ``python -m tensorsight
shapes`` (global hooks until the script's first model forward) and by the observers (``shape-map`` event of the
first forward in a debugged or doctored run). The recorder only reads what the hooks hand it: shapes, dtypes,
devices and sizes, never values, so it syncs nothing and changes nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from tensorsight.agent.runtime.user_code import user_location
from tensorsight.agent.runtime.user_libs import loaded_torch
from tensorsight.core.notation import dtype_name
from tensorsight.core.shapes import ShapeRow

MAX_MODULES = 5000  # a shape map of a bigger model keeps its first modules (tree order)


def tensors_in(value: Any, limit: int = 16) -> list[Any]:
    """Tensors inside a module's inputs/outputs (tuples, lists, dicts, nested), in order, at most ``limit``."""
    torch = loaded_torch()
    found: list[Any] = []
    if torch is None:
        return found
    stack = [value]
    while stack and len(found) < limit:
        item = stack.pop(0)
        if isinstance(item, torch.Tensor):
            found.append(item)
        elif isinstance(item, (tuple, list)):
            stack[0:0] = list(item)
        elif isinstance(item, dict):
            stack[0:0] = list(item.values())
    return found


def tensor_bytes(t: Any) -> int:
    try:
        return int(t.numel()) * int(t.element_size())
    except Exception:  # noqa: BLE001 - exotic tensor subclasses
        return 0


def _own_bytes(module: Any) -> int:
    total = 0
    for p in module.parameters(recurse=False):
        total += tensor_bytes(p)
    for b in module.buffers(recurse=False):
        total += tensor_bytes(b)
    return total


def _param_counts(module: Any) -> tuple[int, int]:
    params = trainable = 0
    for p in module.parameters():
        count = int(p.numel())
        params += count
        if p.requires_grad:
            trainable += count
    return params, trainable


class ShapeMapRecorder:
    """Fills one ``ShapeRow`` per submodule of ``root`` from ``before``/``after`` calls (forward pre/post hooks)."""

    def __init__(self, root: Any, root_name: str = "") -> None:
        self.root = root
        self.paths: dict[int, str] = {}
        self.order: list[int] = []
        self.modules: dict[int, Any] = {}
        for path, module in root.named_modules():
            if len(self.order) >= MAX_MODULES:
                break
            key = id(module)
            if key in self.paths:
                continue  # a module registered twice keeps its first path
            self.paths[key] = path
            self.order.append(key)
            self.modules[key] = module
        self.rows: dict[int, ShapeRow] = {}
        self.root_name = root_name

    def covers(self, module: Any) -> bool:
        return id(module) in self.paths

    def before(self, module: Any, args: Any) -> None:
        key = id(module)
        path = self.paths.get(key)
        if path is None:
            return
        row = self.rows.get(key)
        if row is None:
            row = ShapeRow(path=path, type=type(module).__name__, depth=path.count(".") + (1 if path else 0))
            row.input_shapes = [list(t.shape) for t in tensors_in(args)]
            where = user_location(sys._getframe(1))
            if where is not None:
                row.file, row.line = where
            self.rows[key] = row
        row.calls += 1

    def after(self, module: Any, output: Any) -> None:
        row = self.rows.get(id(module))
        if row is None or row.output_shapes:
            return
        outs = tensors_in(output)
        row.output_shapes = [list(t.shape) for t in outs]
        row.dtype = dtype_name(outs[0].dtype) if outs else ""
        row.memory_bytes = sum(tensor_bytes(t) for t in outs)

    def finish(self) -> list[ShapeRow]:
        """Rows in tree order; modules the forward never called appear with ``calls == 0`` and no shapes."""
        rows: list[ShapeRow] = []
        for key in self.order:
            module = self.modules[key]
            path = self.paths[key]
            row = self.rows.get(key) or ShapeRow(
                path=path, type=type(module).__name__, depth=path.count(".") + (1 if path else 0)
            )
            row.params, row.trainable = _param_counts(module)
            row.memory_bytes += _own_bytes(module)
            rows.append(row)
        return rows


def module_label(module: Any) -> str:
    """``Linear(in_features=16, out_features=32, bias=True)`` (torch's extra_repr), shortened."""
    try:
        extra = module.extra_repr()
    except Exception:  # noqa: BLE001
        extra = ""
    text = f"{type(module).__name__}({extra})"
    return text if len(text) <= 100 else text[:97] + "..."


def is_loss_module(module: Any) -> bool:
    torch = loaded_torch()
    return torch is not None and isinstance(module, torch.nn.modules.loss._Loss)


def has_parameters(module: Any) -> bool:
    return next(iter(module.parameters()), None) is not None


def iter_named(values: Iterable[tuple[str, Any]], limit: int = 500) -> Iterable[tuple[str, Any]]:
    for i, item in enumerate(values):
        if i >= limit:
            return
        yield item
