"""Observers (option ``observeShapes``, default on): shapes per user line, silent broadcasting, device mistakes.

Armed by ``install`` (debugger and doctor). Everything heavy happens only inside *observation windows*: from the
program's ``import torch`` until its third optimizer step (or ``MAX_WINDOW_OPS`` torch calls, for programs that never
step), then for one step every ``observeShapesEvery`` steps (default 500), and once for the first evaluation pass
(a module called under ``torch.no_grad()`` or in eval mode, until the next step or ``MAX_EVAL_OPS`` calls; a
global forward pre-hook watches for it until then). Outside a window nothing else of ours is on the torch call
path. Inside a window:
- a ``TorchFunctionMode`` sees each torch call and notes the innermost frame of user code and its line; once that
  frame has moved on to another line (seen at its next torch call, at each step end and when the window closes), the
  values the line's statement assigned (``x = self.fc1(x)`` -> ``x``; ``for xb, yb in loader`` -> ``xb``, ``yb``) are
  read from the frame and the tensors among them published as a ``shape`` event
  ``{file, line, name, text: "f32[64, 16]", shape, dtype, device}`` for the language server's inlay hints (again only
  if a shape changes). The hint is the assigned value itself, never an intermediate op of the line, and a target that
  is not a tensor (``correct += t.sum().item()``) gets none; a line that assigns nothing gets none;
- binary elementwise ops and elementwise losses are checked for silent broadcasting that changes the meaning: an
  elementwise loss between prediction and target of different shapes, a model's prediction against a tensor of
  another rank in the user's loss/metric code (``[N, 1]`` against ``[N]`` makes ``[N, N]``), an operand made by a
  reduction that dropped a dim broadcast back against its source's rank; a ``shape`` finding at the line. Intended
  broadcasts (positional-encoding tables, masks, biases, scaling, keepdim normalisation) involve neither, so stay
  quiet. The origin of tensors (model output, reduction) is remembered by weak reference for the window only;
- global module forward hooks give module outputs to the line that called the module (``out = model(x)``), check that
  tensors fed to a module are on its device, record the first model forward as a ``shape-map`` event, and track the
  module depth so that data moved with ``.to()`` in the training loop itself is told apart from ``.to()`` inside
  ``forward``;
- ``.to()``/``.cuda()``/``.cpu()`` on the same live tensor in two or more steps is a ``device`` finding (the
  transfer belongs before the loop); transfers made inside another library (a logger's own state, while the user's
  line calls it) and transfers of one number are not the user's to move.
Shape and device *errors* are explained from the traceback by ``shape_errors`` (registered here); in a debug session
an exception hook publishes that explanation too. Nothing here reads tensor values, so nothing syncs a device.
"""

from __future__ import annotations

import linecache
import os
import sys
import threading
import weakref
from types import FrameType, ModuleType
from typing import Any

from tensorsight.agent.runtime import events, op_calls, steps
from tensorsight.agent.runtime import excepthook as exceptions
from tensorsight.agent.runtime.forks import in_forked_children
from tensorsight.agent.runtime.guard import never_raise, report_once
from tensorsight.agent.runtime.lazy_import import when_imported
from tensorsight.agent.runtime.options import option
from tensorsight.agent.runtime.transforming import own_mode, skip_frames, transforming
from tensorsight.agent.runtime.untraced_hooks import is_hook_wrapper
from tensorsight.agent.runtime.user_code import PACKAGE_ROOT, is_user_file
from tensorsight.agent.shapes import shape_errors
from tensorsight.agent.shapes.shape_map import (
    ShapeMapRecorder,
    direct_user_caller,
    has_parameters,
    is_loss_module,
    remove_mode,
    tensor_bytes,
    tensors_in,
)
from tensorsight.core import l10n, protocol
from tensorsight.core.devices import TransferLog, device_issues, repeated_transfer_message
from tensorsight.core.findings import Finding
from tensorsight.core.notation import dtype_name, format_bytes, shape_text
from tensorsight.core.protocol import option_default
from tensorsight.core.shapes import (
    StatementTargets,
    elementwise_broadcast_problem,
    loss_broadcast_problem,
    reduction_broadcast_problem,
    statement_targets,
)

FIRST_STEPS = 3
DEFAULT_EVERY: int = option_default("observeShapesEvery")
MAX_WINDOW_OPS = 100_000
MAX_EVAL_OPS = 20_000

_PACKAGE_ROOT = PACKAGE_ROOT + os.sep
# torch code whose tensors are not the user's values: optimizer internals, autograd plumbing, weight init, printing
_SKIP_PATH_PARTS = tuple(
    os.sep.join(("torch", *part.split("/")))
    for part in ("optim/", "autograd/", "nn/init.py", "_tensor_str.py", "nn/utils/clip_grad.py", "utils/hooks.py")
)
_SKIP_FUNCTIONS = {
    "_apply", "reset_parameters", "_load_from_state_dict", "load_state_dict", "state_dict", "__repr__", "__format__",
    "__str__", "__init__",
}  # fmt: skip
_USER, _OURS, _LIB, _SKIP = 0, 1, 2, 3
_DEBUGGER_MARK = os.sep + "debugpy" + os.sep

_ELEMENTWISE = {
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow", "rsub", "atan2",
    "maximum", "minimum", "hypot", "eq", "ne", "lt", "le", "gt", "ge", "subtract", "multiply", "divide",
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
    "__floordiv__", "__rfloordiv__", "__mod__", "__pow__", "__rpow__", "__eq__", "__ne__", "__lt__", "__le__",
    "__gt__", "__ge__",
}  # fmt: skip
_LOSSES = {
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "soft_margin_loss", "poisson_nll_loss", "gaussian_nll_loss", "kl_div",
    "hinge_embedding_loss",
}  # fmt: skip
_TRANSFERS = {"to", "cuda", "cpu"}
# reductions whose ``dim`` is their second positional argument (``norm``'s is its third: handled apart)
_REDUCTIONS = {
    "sum", "mean", "nansum", "nanmean", "prod", "std", "var", "amax", "amin", "argmax", "argmin", "max", "min",
    "median", "nanmedian", "logsumexp", "all", "any", "count_nonzero", "mode", "norm",
}  # fmt: skip
MAX_PROVENANCE = 4096  # live tensors whose origin a window remembers (model outputs, reductions); cleared per window


class _Origin:
    """Where a tensor seen in a window came from: a model's output (``prediction``: the model called from the user's
    code, or a batch-preserving op of one), and/or a reduction that dropped dims (``reduced``: source shape, dims,
    op name). Held by a weak reference to the tensor, never the tensor itself."""

    __slots__ = ("prediction", "reduced", "ref")

    def __init__(self, ref: Any) -> None:
        self.ref = ref
        self.prediction = False
        self.reduced: tuple[tuple[int, ...], tuple[int, ...], str] | None = None


class _LineRecord:
    """An assignment line that ran torch code in a window: its target names and the text last published for it."""

    __slots__ = ("emitted", "file", "line", "names")

    def __init__(self, file: str, line: int, names: tuple[str | None, ...]) -> None:
        self.file = file
        self.line = line
        self.names = names
        self.emitted: str | None = None


class _State:
    def __init__(self) -> None:
        self.torch: ModuleType | None = None
        self.torch_root = (
            os.sep + "torch" + os.sep
        )  # the torch package folder once imported (its files are not "a library")
        self.pid = os.getpid()
        self.every = DEFAULT_EVERY
        self.window = False
        self.window_ops = 0
        self.window_limit = MAX_WINDOW_OPS
        self.initial = True
        self.eval_watch = False  # between windows, until the first evaluation pass: look for one
        self.eval_seen = False
        self.mode: Any = None
        self.mode_thread: int | None = None
        self.handles: list[Any] = []
        self.busy = False
        self.depth = 0
        self.file_kinds: dict[str, int] = {}
        self.full_paths: dict[str, str] = {}  # co_filename -> absolute path (asked for every observed op)
        self.targets: dict[str, dict[int, StatementTargets]] = {}
        self.lines: dict[tuple[str, int], _LineRecord] = {}
        # per code object: the frame last seen running torch code and its statement's (file, line). The frame is held
        # only while a window is open, so that its targets can be read once the statement has run.
        self.pending: dict[Any, tuple[FrameType, tuple[str, int]]] = {}
        self.reported: set[tuple[str, str, int]] = set()
        self.transfers = TransferLog()
        self.sources: dict[int, tuple[Any, int]] = {}
        self.generation = 0
        self.device_checked: set[int] = set()
        self.map_recorder: ShapeMapRecorder | None = None
        self.mapped_roots: set[int] = set()
        self.origins: dict[int, _Origin] = {}


_state = _State()


# ---- arming --------------------------------------------------------------------------------------------------------


def arm(origin: str = "debugger") -> None:
    """Register the shape/device error explainer; open the first window once the program imports torch."""
    exceptions.register_explainer(shape_errors.explain)
    if not option("observeShapes"):
        return
    every = option("observeShapesEvery")
    if isinstance(every, int) and not isinstance(every, bool) and every > 0:
        _state.every = every
    else:
        report_once(
            "observe-every", f"observeShapesEvery must be a positive integer, got {every!r}; using {DEFAULT_EVERY}"
        )
    steps.add_step_listener(_on_step)  # before torch is imported: its hook is armed by the same import
    events.subscribe(_on_event)
    when_imported("torch", _on_torch)


@never_raise()
def _on_torch(torch: ModuleType) -> None:
    _state.torch = torch
    if torch.__file__:
        _state.torch_root = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    in_forked_children(_leave_forked_child)
    _open_window()


@never_raise()
def _leave_forked_child() -> None:
    """In a forked child (a DataLoader worker, forked inside a window): the mode comes off this thread's stack. The
    child observes nothing (``_state.pid``) and runs none of the parent's steps, so the window would never close
    there, and every op of ``__getitem__`` and ``collate`` would pass through us for the worker's whole life."""
    if _state.mode is not None and _state.mode_thread == threading.get_ident():
        remove_mode(_state.mode)
    _state.mode_thread = None


# ---- windows -------------------------------------------------------------------------------------------------------


def _make_mode(torch: ModuleType) -> Any:
    tensor_type = torch.Tensor

    class ObserverMode(torch.overrides.TorchFunctionMode):  # type: ignore[name-defined,misc]
        """Sees each torch call while a window is open; pass-through otherwise. The op runs from the caller's line
        (``op_calls``: warnings keep their location) and our reads are shielded from tensor subclasses."""

        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            if transforming():
                return func(*args, **kwargs)
            result = op_calls.call_as_caller(func, args, kwargs, op_calls.caller_frame(func, sys._getframe(1)))
            if _state.window and not _state.busy and os.getpid() == _state.pid:
                _state.busy = True
                try:
                    read = [a for a in args if isinstance(a, tensor_type)]
                    if isinstance(result, tensor_type):
                        read.append(result)
                    with op_calls.shielded(read):
                        _observe_call(func, args, kwargs, result)
                except Exception as exc:  # noqa: BLE001 - never break the user's op
                    report_once("observers-op", f"shape observer failed: {type(exc).__name__}: {exc}")
                finally:
                    _state.busy = False
            return result

    skip_frames(ObserverMode.__torch_function__.__code__)
    mode = ObserverMode()
    own_mode(mode, lambda: _state.mode is mode and _state.mode_thread is not None)  # on while a window is open
    return mode


def _foreign_modes(torch: ModuleType) -> bool:
    """True when the program (or a library) has its own TorchFunctionMode active: we then stay off the stack."""
    from torch.overrides import _get_current_function_mode_stack

    return any(not type(mode).__module__.startswith("tensorsight") for mode in _get_current_function_mode_stack())


def _open_window(limit: int = MAX_WINDOW_OPS) -> None:
    torch = _state.torch
    if torch is None or _state.window:
        return
    _state.window = True
    _state.window_ops = 0
    _state.window_limit = limit
    _state.depth = 0
    _state.device_checked.clear()
    if not _state.handles:
        # Registered once and kept: the hooks do nothing between windows. Dynamo guards on the number of global
        # module hooks, so hooks that came and went with each window would recompile a compiled model each time.
        from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

        _state.handles = [
            register_module_forward_pre_hook(_before_module),
            register_module_forward_hook(_after_module, always_call=True),
        ]
    if _foreign_modes(torch):
        report_once("observers-foreign-mode", "another TorchFunctionMode is active: per-line shapes limited to modules")
        return
    if _state.mode is None:
        _state.mode = _make_mode(torch)
    from torch.overrides import _push_mode

    _push_mode(_state.mode)
    _state.mode_thread = threading.get_ident()


def _close_window() -> None:
    if not _state.window:
        return
    _flush_lines()
    _state.pending.clear()  # drop the frames (and the user's values they hold) until the next window
    _state.origins.clear()
    _state.window = False
    _state.initial = False
    _state.map_recorder = None
    if _state.mode_thread is not None and _state.mode_thread == threading.get_ident():
        remove_mode(_state.mode)
        _state.mode_thread = None
    if not _state.eval_seen:
        # Our global hooks (not the user's model: a hook stored on the model would travel into torch.save(model)
        # pickles) watch for the first evaluation pass from now on.
        _state.eval_watch = True


def _watch_for_evaluation(module: Any) -> None:
    """Until the first evaluation pass: open a window for it (validation code runs rarely, often with bugs)."""
    torch = _state.torch
    if _state.window or torch is None or (module.training and torch.is_grad_enabled()):
        return
    _state.eval_seen = True
    _state.eval_watch = False
    _open_window(MAX_EVAL_OPS)


@never_raise()
def _on_step(step: int, optimizer: Any) -> None:
    if _state.window:
        _flush_lines()
        _report_transfers()
        if not _state.initial or step >= FIRST_STEPS:
            _close_window()
    elif step % _state.every == 0:
        _open_window()


@never_raise()
def _on_event(event: dict[str, Any]) -> None:
    if event.get("type") == "run-finished":
        _flush_lines()
        _report_transfers()
        if _state.window:
            _close_window()


# ---- attribution to user lines -------------------------------------------------------------------------------------


def _file_kind(filename: str) -> int:
    kind = _state.file_kinds.get(filename)
    if kind is None:
        full = os.path.abspath(filename) if filename and not filename.startswith("<") else filename
        if full.startswith(_PACKAGE_ROOT) or _DEBUGGER_MARK in full or "pydevd" in os.path.basename(full):
            kind = _OURS  # our code and the debugger's (console evaluations, variable views) are not the program
        elif is_user_file(filename):
            kind = _USER
        elif any(part in full for part in _SKIP_PATH_PARTS):
            kind = _SKIP
        else:
            kind = _LIB
        _state.file_kinds[filename] = kind
    return kind


def _locate(frame: FrameType | None, from_hook: bool = False, func: Any = None) -> tuple[FrameType | None, bool]:
    """(innermost user frame, whether torch internals such as optimizers/init sit in between).

    (None, True) when our code or the debugger's made the call. ``from_hook``: the walk starts inside our own hook,
    whose frames are skipped until torch's. ``func``: the torch function being observed; another TensorSight mode
    stacked above ours (the sentinel's) that is just passing this same call on is looked through, while the ops it
    runs for itself are not the user's.
    """
    skipped = False
    leading = from_hook
    while frame is not None:
        code = frame.f_code
        if op_calls.is_op_call(code) or is_hook_wrapper(code):  # a mode's call of the op (compiled at the user's
            # line) or the frame that runs a hook untraced: not the user's frame
            frame = frame.f_back
            continue
        kind = _file_kind(code.co_filename)
        if kind == _OURS:
            passing_on = (
                func is not None and code.co_name == "__torch_function__" and frame.f_locals.get("func") is func
            )
            if not leading and not passing_on:
                return None, True
        else:
            leading = False
            if kind == _USER:
                return frame, skipped
            if kind == _SKIP or code.co_name in _SKIP_FUNCTIONS:
                skipped = True
        frame = frame.f_back
    return None, skipped


def _statement(filename: str, line: int) -> StatementTargets:
    table = _state.targets.get(filename)
    if table is None:
        table = statement_targets("".join(linecache.getlines(filename)))
        _state.targets[filename] = table
    return table.get(line) or StatementTargets(line, ())


def _note_line(frame: FrameType) -> None:
    """``frame`` runs torch code at its current line: the statement it ran before, if another, is complete now."""
    filename = frame.f_code.co_filename
    statement = _statement(filename, frame.f_lineno)
    full = _state.full_paths.get(filename)
    if full is None:
        full = _state.full_paths[filename] = os.path.abspath(filename)
    key = (full, statement.anchor)
    if statement.names and key not in _state.lines:
        _state.lines[key] = _LineRecord(key[0], key[1], statement.names)
    previous = _state.pending.get(frame.f_code)
    if previous is not None and (previous[0] is not frame or previous[1] != key):
        _finish_line(*previous)
    if statement.loop is not None and (previous is None or previous[1] != key):
        # a ``for`` header runs no torch code of its own when a DataLoader yields the batch: its targets are read
        # here, at the first line of its body that runs torch code, before anything can reassign them
        header = (key[0], statement.loop)
        if header not in _state.lines:
            names = _statement(filename, statement.loop).names
            _state.lines[header] = _LineRecord(header[0], header[1], names)
        _finish_line(frame, header)
    _state.pending[frame.f_code] = (frame, key)


def _finish_line(frame: FrameType, key: tuple[str, int]) -> None:
    record = _state.lines.get(key)
    if record is not None:
        assigned = _assigned_tensors(frame, record.names)
        with op_calls.shielded([t for _, t in assigned]):  # reading shapes must not run a subclass's __torch_function__
            _emit_line(record, assigned)


def _assigned_tensors(frame: FrameType, names: tuple[str | None, ...]) -> list[tuple[str, Any]]:
    """The (name, tensor) pairs among a statement's targets, as the frame holds them now (after the statement ran)."""
    torch = _state.torch
    assert torch is not None
    scope = frame.f_locals
    out = []
    for name in names:
        if not name:
            continue  # a subscript or starred target: no single value to name
        head, *attributes = name.split(".")
        value = scope.get(head, _MISSING)
        if value is _MISSING and frame.f_code.co_name == "<module>":
            value = frame.f_globals.get(head, _MISSING)
        for attribute in attributes:
            value = _stored_attribute(value, attribute)
        if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
            out.append((name, value))
    return out


_MISSING = object()


def _stored_attribute(obj: Any, attribute: str) -> Any:
    """``obj.attribute`` as stored (instance dict, or a module's buffers), without running properties or __getattr__."""
    if obj is _MISSING:
        return _MISSING
    try:
        stored = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return _MISSING
    if attribute in stored:
        return stored[attribute]
    buffers = stored.get("_buffers")
    if isinstance(buffers, dict) and attribute in buffers:
        return buffers[attribute]
    return _MISSING


def _emit_line(record: _LineRecord, assigned: list[tuple[str, Any]]) -> None:
    if not assigned:
        return
    values = [
        protocol.ShapeValue(
            name=name,
            text=shape_text(tuple(t.shape), str(t.dtype)),
            shape=list(t.shape),
            dtype=dtype_name(str(t.dtype)),
            device=str(t.device),
        )
        for name, t in assigned
    ]
    text = ", ".join(v.text for v in values)
    if text == record.emitted:
        return
    record.emitted = text
    first = values[0]
    events.send(
        protocol.ShapeEvent(
            file=record.file,
            line=record.line,
            name=", ".join(v.name for v in values),
            text=text,
            shape=first.shape,
            dtype=first.dtype,
            device=first.device,
            step=steps.current_step(),
            values=values if len(values) > 1 else None,
        )
    )


def _flush_lines() -> None:
    """Publish the statements whose frames have moved on (or returned); a statement still running stays pending."""
    for code, (frame, key) in list(_state.pending.items()):
        if (
            os.path.abspath(frame.f_code.co_filename),
            _statement(frame.f_code.co_filename, frame.f_lineno).anchor,
        ) != key:
            _finish_line(frame, key)
            del _state.pending[code]


def _report(kind: str, frame: FrameType, message: str, details: dict[str, Any], severity: str = "warning") -> None:
    file = os.path.abspath(frame.f_code.co_filename)
    key = (kind, file, frame.f_lineno)
    if key in _state.reported:
        return
    _state.reported.add(key)
    events.emit_finding(Finding(kind, severity, message, file, frame.f_lineno, steps.current_step(), None, details))


# ---- per torch call ------------------------------------------------------------------------------------------------


def _observe_call(func: Any, args: Any, kwargs: dict[str, Any], result: Any) -> None:
    _state.window_ops += 1
    if _state.window_ops > _state.window_limit:
        # A program that never steps (or a long evaluation): stop observing now; the window closes at the next module
        # call or step, since our mode cannot leave the stack from inside its own __torch_function__.
        return
    name = getattr(func, "__name__", "")
    recorder = _state.map_recorder
    if recorder is not None and recorder.running:
        where = direct_user_caller(func, sys._getframe(2))
        if where is not None:
            recorder.op(func, args, result, where)  # a functional op between the modules of the first forward
    frame, through_internals = _locate(sys._getframe(2), func=func)
    if frame is None:
        return
    torch = _state.torch
    assert torch is not None
    if name in _TRANSFERS:
        _observe_transfer(frame, name, args, kwargs, result, through_internals)
    if through_internals:
        return
    if name in _ELEMENTWISE:
        operands = [a for a in args[:2] if isinstance(a, torch.Tensor)]
        if len(operands) == 2:
            problem = _meaning_changing_broadcast(operands[0], operands[1])
            if problem is not None:
                _report_broadcast(frame, name, problem)
    elif name in _LOSSES:
        prediction = args[0] if args else kwargs.get("input")
        target = args[1] if len(args) > 1 else kwargs.get("target")
        if isinstance(prediction, torch.Tensor) and isinstance(target, torch.Tensor):
            problem = loss_broadcast_problem(tuple(prediction.shape), tuple(target.shape))
            if problem is not None:
                _report_broadcast(frame, name, problem)
    _note_origin(name, args, kwargs, result)
    _note_line(frame)


# ---- which broadcasts change the meaning ---------------------------------------------------------------------------


def _origin(t: Any, create: bool = False) -> _Origin | None:
    origin = _state.origins.get(id(t))
    if origin is not None and origin.ref() is not t:
        origin = None  # the id was reused by another tensor
        del _state.origins[id(t)]
    if origin is None and create:
        if len(_state.origins) >= MAX_PROVENANCE:
            _prune_origins()
        try:
            origin = _Origin(weakref.ref(t))
        except TypeError:
            return None
        _state.origins[id(t)] = origin
    return origin


def _prune_origins() -> None:
    """Forget the origins of tensors that died; if the window still remembers too many, the oldest quarter."""
    origins = _state.origins
    for key in [key for key, origin in origins.items() if origin.ref() is None]:
        del origins[key]
    if len(origins) >= MAX_PROVENANCE:
        for key in list(origins)[: MAX_PROVENANCE // 4]:
            del origins[key]


def _meaning_changing_broadcast(first: Any, second: Any) -> Any:
    """The broadcast of two operands when it changes what the op means, else None.

    Two cases: a side made by a reduction that dropped a dim, broadcast against its source's rank; and, in the user's
    code outside any model forward (loss and metric code), a model's prediction against a tensor of another rank that
    grows the result (``[N, 1] - [N]``). Broadcasts between other tensors are how positional encodings
    (``position * div_term``), masks, biases and attention scaling are written, and are left alone.
    """
    shapes = (tuple(first.shape), tuple(second.shape))
    for index, operand in enumerate((first, second)):
        origin = _origin(operand)
        if origin is not None and origin.reduced is not None:
            source, dims, reduction = origin.reduced
            problem = reduction_broadcast_problem(source, dims, shapes[index], shapes[1 - index], reduction)
            if problem is not None:
                return problem
    if _state.depth == 0 and any((o := _origin(t)) is not None and o.prediction for t in (first, second)):
        return elementwise_broadcast_problem(*shapes)
    return None


def _reduced_dims(name: str, args: Any, kwargs: dict[str, Any]) -> tuple[int, ...] | None:
    dim = kwargs.get("dim")
    if dim is None and name == "norm":
        dim = args[2] if len(args) > 2 else None
    elif dim is None and len(args) > 1:
        dim = args[1]
    if isinstance(dim, int) and not isinstance(dim, bool):
        return (dim,)
    if isinstance(dim, (tuple, list)) and dim and all(isinstance(d, int) and not isinstance(d, bool) for d in dim):
        return tuple(dim)
    return None


def _note_origin(name: str, args: Any, kwargs: dict[str, Any], result: Any) -> None:
    """Remember what ``result`` is: the reduction of a tensor that dropped dims, and/or a prediction (a
    batch-preserving op on one in the user's loss or metric code: ``torch.sigmoid(out)``, ``out.argmax(1)``)."""
    torch = _state.torch
    assert torch is not None
    tensor_type = torch.Tensor
    outputs = [result] if isinstance(result, tensor_type) else []
    if not outputs and isinstance(result, tuple):  # ``x.max(1)``: (values, indices)
        outputs = [r for r in result[:2] if isinstance(r, tensor_type)]
    if not outputs:
        return
    inputs = [a for a in args if isinstance(a, tensor_type)]
    if name in _REDUCTIONS and inputs and inputs[0] is args[0]:
        dims = _reduced_dims(name, args, kwargs)
        source = tuple(args[0].shape)
        if dims is not None and source and outputs[0].dim() == len(source) - len(set(d % len(source) for d in dims)):
            for output in outputs:
                origin = _origin(output, create=True)
                if origin is not None:
                    origin.reduced = (source, dims, name)
    if _state.depth == 0 and len(inputs) == 1:
        origin = _origin(inputs[0])
        if origin is not None and origin.prediction:
            for output in outputs:
                if output.dim() >= 1 and inputs[0].dim() >= 1 and output.shape[0] == inputs[0].shape[0]:
                    tagged = _origin(output, create=True)
                    if tagged is not None:
                        tagged.prediction = True


def _note_predictions(output: Any) -> None:
    """A model called from the user's code returned ``output``: its tensors are predictions."""
    for t in tensors_in(output, limit=8):
        origin = _origin(t, create=True)
        if origin is not None:
            origin.prediction = True


def _report_broadcast(frame: FrameType, op: str, problem: Any) -> None:
    _report(
        "shape",
        frame,
        l10n.t("silent broadcasting in {0}: {1}", op.strip("_"), problem.message),
        {"op": op, "shapes": [list(problem.first), list(problem.second)], "result": list(problem.result)},
    )


def _is_device_call(name: str, args: Any, kwargs: dict[str, Any]) -> bool:
    torch = _state.torch
    assert torch is not None
    if name in ("cuda", "cpu"):
        return True
    if "device" in kwargs:
        return True
    for arg in args[1:]:
        if isinstance(arg, (torch.device, torch.Tensor)):
            return True
        if isinstance(arg, str):
            return True
    return False


def _called_from_library(frame: FrameType | None) -> bool:
    """Whether a library other than torch sits between the op and the innermost user frame: the op is then that
    library's, even though the user's line called into the library (``self.log(...)`` in a LightningModule)."""
    torch_root = _state.torch_root
    while frame is not None:
        code = frame.f_code
        if not op_calls.is_op_call(code):
            kind = _file_kind(code.co_filename)
            if kind == _USER:
                return False
            if kind == _LIB and not _state.full_paths.setdefault(
                code.co_filename, os.path.abspath(code.co_filename)
            ).startswith(torch_root):
                return True
        frame = frame.f_back
    return False


def _source_key(t: Any) -> tuple[Any, ...]:
    """Identity of the data moved: the same live tensor object with the same ``_version`` is the same data."""
    ref_and_gen = _state.sources.get(id(t))
    if ref_and_gen is None or ref_and_gen[0]() is not t:
        _state.generation += 1
        try:
            ref_and_gen = (weakref.ref(t), _state.generation)
        except TypeError:
            return (id(t), -1, 0)
        _state.sources[id(t)] = ref_and_gen
    return (id(t), ref_and_gen[1], int(getattr(t, "_version", 0)))


def _observe_transfer(frame: FrameType, name: str, args: Any, kwargs: dict[str, Any], result: Any, inner: bool) -> None:
    torch = _state.torch
    assert torch is not None
    source = args[0] if args else None
    if not isinstance(source, torch.Tensor) or not isinstance(result, torch.Tensor):
        return
    if not _is_device_call(name, args, kwargs):
        return
    if source.numel() <= 1:
        return  # one number (a logged loss, a step counter): moving it costs a sync at most, never a copy worth moving
    if _called_from_library(sys._getframe(3)):
        return  # a library's own bookkeeping (Lightning's ``self.log``): not a transfer the user wrote
    src, dst = str(source.device), str(result.device)
    if src == dst and _state.depth > 0:
        return  # ``.to(x.device)`` inside forward: a no-op that stays a no-op once the model is on the accelerator
    _state.transfers.record(
        os.path.abspath(frame.f_code.co_filename),
        frame.f_lineno,
        _source_key(source),
        steps.current_step(),
        tensor_bytes(source),
        src,
        dst,
    )


def _report_transfers() -> None:
    for file, line, info in _state.transfers.repeated(min_steps=2):
        key = ("device", file, line)
        if key in _state.reported:
            continue
        _state.reported.add(key)
        message = repeated_transfer_message(info, format_bytes(info["nbytes"]))
        events.emit_finding(Finding("device", "warning", message, file, line, steps.current_step(), None, dict(info)))


# ---- module hooks --------------------------------------------------------------------------------------------------


@never_raise()
def _before_module(module: Any, args: Any) -> None:
    if transforming() or _state.busy:
        return
    if not _state.window:
        if not _state.eval_watch:
            return
        _watch_for_evaluation(module)
        if not _state.window:
            return
    if _state.window_ops > _state.window_limit:
        _close_window()
        return
    _state.busy = True
    try:
        with op_calls.shielded(tensors_in(args)):  # reading shapes must not run a subclass's __torch_function__
            _enter_module(module, args)
    finally:
        _state.busy = False


def _enter_module(module: Any, args: Any) -> None:
    depth = _state.depth
    _state.depth += 1
    if depth == 0 and _state.map_recorder is None and id(module) not in _state.mapped_roots:
        if not is_loss_module(module) and has_parameters(module):
            _state.mapped_roots.add(id(module))
            _state.map_recorder = ShapeMapRecorder(module, watch_ops=False)  # our mode feeds its ops
    recorder = _state.map_recorder
    if recorder is not None:
        recorder.before(module, args)
    if id(module) not in _state.device_checked:
        _state.device_checked.add(id(module))
        _check_module_devices(module, args)


@never_raise()
def _after_module(module: Any, args: Any, output: Any) -> None:
    if transforming() or _state.busy or not _state.window:
        return
    _state.busy = True
    try:
        with op_calls.shielded(tensors_in((args, output))):
            _leave_module(module, output)
    finally:
        _state.busy = False


def _leave_module(module: Any, output: Any) -> None:
    _state.depth = max(0, _state.depth - 1)
    recorder = _state.map_recorder
    if recorder is not None:
        recorder.after(module, output)
        if module is recorder.root:
            _state.map_recorder = None
            if output is not None:  # a forward that raised is explained by shape_errors instead
                _emit_shape_map(recorder)
    if output is None:
        return  # the forward raised: the explainer handles it
    if _state.depth == 0 and not is_loss_module(module):
        _note_predictions(output)
    frame, internals = _locate(sys._getframe(0), from_hook=True)
    if frame is not None and not internals:
        _note_line(frame)


def _emit_shape_map(recorder: ShapeMapRecorder) -> None:
    rows = recorder.finish()
    root_row = rows[0] if rows else None
    located = root_row is not None and root_row.file is not None
    events.send(
        protocol.ShapeMapEvent(
            model=type(recorder.root).__name__,
            rows=[r.to_dict() for r in rows],
            file=root_row.file if located and root_row is not None else None,
            line=root_row.line if located and root_row is not None else None,
        )
    )


def _check_module_devices(module: Any, args: Any) -> None:
    own = {name: str(p.device) for name, p in module.named_parameters(recurse=False)}
    if not own:
        own = {name: str(b.device) for name, b in module.named_buffers(recurse=False)}
    if not own:
        return
    inputs = [(f"input {i}", str(t.device)) for i, t in enumerate(tensors_in(args, limit=8))]
    issues = [i for i in device_issues(own, inputs, model_name=type(module).__name__) if i.subject.startswith("input")]
    if not issues:
        return
    frame, _ = _locate(sys._getframe(0), from_hook=True)
    if frame is None:
        return
    first = issues[0]
    _report(
        "device",
        frame,
        f"{first.message} ({len(issues)} input(s) affected)" if len(issues) > 1 else first.message,
        {"module": type(module).__name__, "input_device": first.device, "module_device": first.expected},
        severity="error",
    )
