"""Records the shape map of one model forward: per module, input/output shapes, dtype, parameters and memory.

Used by ``tensorsight.check_shapes`` (toolbox, per-module hooks on one sample batch), by ``python -m tensorsight
shapes`` (global hooks until the script's first model forward) and by the observers (``shape-map`` event of the
first forward in a debugged or doctored run). The recorder only reads what the hooks hand it: shapes, dtypes,
devices and sizes, never values, so it syncs nothing and changes nothing.
"""

from __future__ import annotations

import os
import sys
import weakref
from collections.abc import Iterable
from typing import Any

from tensorsight.agent.runtime import op_calls
from tensorsight.agent.runtime.user_code import PACKAGE_ROOT, is_user_file, user_location
from tensorsight.agent.runtime.user_libs import loaded_torch
from tensorsight.core.notation import dtype_name
from tensorsight.core.shapes import ShapeRow

MAX_MODULES = 5000  # a shape map of a bigger model keeps its first modules (tree order), and as many op rows


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


# torch's Python wrappers between a functional call and its dispatch (``F.max_pool2d`` -> ``_max_pool2d``): looked
# through, while a library module's ``forward`` (``nn.Conv2d`` calling ``F.conv2d``) is not
_FUNCTIONAL_WRAPPERS = (os.path.join("torch", "nn", "functional.py"), os.path.join("torch", "_jit_internal.py"))


def op_label(func: Any) -> str:
    """How a functional op is shown in a shape map: ``F.max_pool2d``, ``torch.flatten``, ``Tensor.view``."""
    name = str(getattr(func, "__name__", "") or "op")
    if name.startswith("__") and name.endswith("__"):
        name = name[2:-2]  # an operator: ``x == 0`` is Tensor.eq
    name = name.lstrip("_") or "op"  # a private wrapper: ``_max_pool2d`` is F.max_pool2d
    module = getattr(func, "__module__", None) or ""
    if name == "getitem":
        return "Tensor[...]"
    if module.startswith("torch.nn.functional"):
        return f"F.{name}"
    if not module or str(getattr(func, "__qualname__", "")).startswith(("TensorBase.", "Tensor.")):
        return f"Tensor.{name}"
    return f"torch.{name}"


def direct_user_caller(func: Any, frame: Any) -> tuple[str, int] | None:
    """``(file, line)`` when the op ``func`` was called straight from the user's code (a line of a ``forward``), not
    from a library's (``nn.Conv2d.forward`` calling ``F.conv2d``); ``frame`` is the frame that handed the call to a
    TorchFunctionMode. Our own frames and torch's dispatch plumbing are looked through."""
    frame = op_calls.caller_frame(func, frame)
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        if (
            op_calls.is_op_call(code)
            or filename.endswith(_FUNCTIONAL_WRAPPERS)
            or os.path.abspath(filename).startswith(PACKAGE_ROOT + os.sep)
        ):
            frame = frame.f_back
            continue
        if is_user_file(filename):
            return os.path.abspath(filename), frame.f_lineno
        return None
    return None


class ShapeMapRecorder:
    """Fills one ``ShapeRow`` per submodule of ``root`` from ``before``/``after`` calls (forward pre/post hooks), and
    one per functional op the user's ``forward`` code runs between them (``op``).

    Rows come out in the order the forward ran them (a module registered last but called first comes first), each
    op under the module whose ``forward`` called it; modules the forward never called follow, in tree order. The
    memory column counts each output storage once: an in-place op (``ReLU(inplace=True)``, ``x.add_``), a view
    (``x.view``, ``torch.flatten``) or a parent returning its last child's output adds nothing.

    ``watch_ops``: the recorder pushes its own TorchFunctionMode while the root's forward runs, to see the functional
    ops (``check_shapes``, the ``shapes`` command); the observers, whose mode already sees every op, pass False and
    feed ``op`` themselves.
    """

    def __init__(self, root: Any, root_name: str = "", watch_ops: bool = True) -> None:
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
        self.sequence: list[ShapeRow] = []  # module and op rows, in the order they first ran
        self.running: list[int] = []  # the modules whose forward is running, innermost last
        self.op_rows: dict[tuple[int, str, int, str], ShapeRow] = {}
        self.counted: dict[tuple[str, int], list[Any]] = {}  # (device, storage pointer) -> weakrefs of its tensors
        self.watch_ops = watch_ops
        self.mode: Any = None
        self._module_of: dict[int, int] = {}  # id of a module row -> its module's key (op rows have none)

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
            self.sequence.append(row)
            self._module_of[id(row)] = key
        row.calls += 1
        self.running.append(key)
        if module is self.root and self.watch_ops and self.mode is None:
            self._push_mode()

    def after(self, module: Any, output: Any) -> None:
        key = id(module)
        if self.running and self.running[-1] == key:
            self.running.pop()
        if module is self.root:
            self._pop_mode()
        row = self.rows.get(key)
        if row is None or row.output_shapes:
            return
        outs = tensors_in(output)
        row.output_shapes = [list(t.shape) for t in outs]
        row.dtype = dtype_name(outs[0].dtype) if outs else ""
        row.memory_bytes = self._new_bytes(outs)

    def op(self, func: Any, args: Any, result: Any, where: tuple[str, int]) -> None:
        """A functional op the user's forward code ran at ``where`` (file, line) inside the module running now."""
        if not self.running:
            return
        parent = self.rows.get(self.running[-1])
        outs = tensors_in(result, limit=4)
        if parent is None or not outs or len(self.op_rows) >= MAX_MODULES:
            return
        label = op_label(func)
        key = (self.running[-1], where[0], where[1], label)
        row = self.op_rows.get(key)
        if row is None:
            # a path of its own (rows are looked up by path): the parent's, the op and its line
            path = f"{parent.path}/{label}@{where[1]}"
            row = ShapeRow(path=path, type=label, depth=parent.depth + 1, kind="op")
            row.input_shapes = [list(t.shape) for t in tensors_in(args, limit=3)]
            row.output_shapes = [list(t.shape) for t in outs]
            row.dtype = dtype_name(outs[0].dtype)
            row.memory_bytes = self._new_bytes(outs)
            row.file, row.line = where
            self.op_rows[key] = row
            self.sequence.append(row)
        row.calls += 1

    def _new_bytes(self, tensors: list[Any]) -> int:
        """Bytes of the storages among ``tensors`` that no earlier row of this map counted (and still alive)."""
        total = 0
        for t in tensors:
            try:
                key = (str(t.device), int(t.untyped_storage().data_ptr()))
            except Exception:  # noqa: BLE001 - meta, sparse or subclass tensors: count them as they are
                total += tensor_bytes(t)
                continue
            alive = [ref for ref in self.counted.get(key, []) if ref() is not None]
            seen = bool(key[1] and alive)  # the same memory as a live earlier output: a view or an in-place result
            if len(alive) < 64:
                try:  # each tensor on the storage keeps it known, so a view of a view of a dropped output still is
                    alive.append(weakref.ref(t))
                except TypeError:
                    pass
            self.counted[key] = alive
            if not seen:
                total += tensor_bytes(t)
        return total

    def _push_mode(self) -> None:
        torch = loaded_torch()
        if torch is None:
            return
        from torch.overrides import TorchFunctionMode, _push_mode

        recorder = self

        class _ShapeMapOps(TorchFunctionMode):  # type: ignore[misc]
            """Sees the ops of one forward for its shape map; each op runs from the caller's line (``op_calls``)."""

            def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                kwargs = kwargs or {}
                caller = op_calls.caller_frame(func, sys._getframe(1))
                result = op_calls.call_as_caller(func, args, kwargs, caller)
                try:
                    where = direct_user_caller(func, sys._getframe(1))
                    if where is not None:
                        with op_calls.shielded([a for a in args if isinstance(a, torch.Tensor)]):
                            recorder.op(func, args, result, where)
                except Exception:  # noqa: BLE001 - a shape map never breaks the forward
                    pass
                return result

        self.mode = _ShapeMapOps()
        _push_mode(self.mode)

    def _pop_mode(self) -> None:
        mode, self.mode = self.mode, None
        if mode is not None:
            remove_mode(mode)

    def finish(self) -> list[ShapeRow]:
        """Rows in the order the forward ran them; modules it never called follow with ``calls == 0``, no shapes."""
        self._pop_mode()
        rows: list[tuple[ShapeRow, Any]] = [(row, self._module_of.get(id(row))) for row in self.sequence]
        for key in self.order:
            if key not in self.rows:
                path = self.paths[key]
                depth = path.count(".") + (1 if path else 0)
                rows.append((ShapeRow(path=path, type=type(self.modules[key]).__name__, depth=depth), key))
        for row, key in rows:
            if key is None:
                continue  # an op row: no parameters of its own
            module = self.modules[key]
            row.params, row.trainable = _param_counts(module)
            row.memory_bytes += _own_bytes(module)
        return [row for row, _ in rows]
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


def remove_mode(mode: Any) -> None:
    """Take ``mode`` off this thread's torch-function stack even if modes were pushed above it (they are put back in
    order); a mode no longer on the stack is left alone."""
    from torch.overrides import _get_current_function_mode_stack, _pop_mode, _push_mode

    if not any(m is mode for m in _get_current_function_mode_stack()):
        return
    above = []
    while True:
        top = _pop_mode()
        if top is mode:
            break
        above.append(top)
    for other in reversed(above):
        _push_mode(other)
