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
The detectors live beside this module (``line_shapes``, ``broadcasts``, ``transfers``) and share what the windows
remember through ``window_state``; this module opens and closes the windows and feeds them. Shape and device
*errors* are explained from the traceback by ``shape_errors`` (registered here); in a debug session
an exception hook publishes that explanation too. Nothing here reads tensor values, so nothing syncs a device.
"""

from __future__ import annotations

import os
import sys
import threading
from types import ModuleType
from typing import Any

from tensorsight.agent.runtime import events, op_calls, steps
from tensorsight.agent.runtime import excepthook as exceptions
from tensorsight.agent.runtime.forks import in_forked_children
from tensorsight.agent.runtime.guard import never_raise, report_once
from tensorsight.agent.runtime.lazy_import import when_imported
from tensorsight.agent.runtime.options import option
from tensorsight.agent.runtime.transforming import own_mode, skip_frames, transforming
from tensorsight.agent.shapes import broadcasts, line_shapes, shape_errors, transfers, window_state
from tensorsight.agent.shapes.shape_map import (
    ShapeMapRecorder,
    direct_user_caller,
    has_parameters,
    is_loss_module,
    remove_mode,
    tensors_in,
)
from tensorsight.agent.shapes.window_state import DEFAULT_EVERY, MAX_WINDOW_OPS, locate
from tensorsight.core import protocol

FIRST_STEPS = 3
MAX_EVAL_OPS = 20_000


# ---- arming --------------------------------------------------------------------------------------------------------


def arm(origin: str = "debugger") -> None:
    """Register the shape/device error explainer; open the first window once the program imports torch."""
    exceptions.register_explainer(shape_errors.explain)
    if not option("observeShapes"):
        return
    every = option("observeShapesEvery")
    if isinstance(every, int) and not isinstance(every, bool) and every > 0:
        window_state.state.every = every
    else:
        report_once(
            "observe-every", f"observeShapesEvery must be a positive integer, got {every!r}; using {DEFAULT_EVERY}"
        )
    steps.add_step_listener(_on_step)  # before torch is imported: its hook is armed by the same import
    events.subscribe(_on_event, ("run-finished",))
    when_imported("torch", _on_torch)


@never_raise()
def _on_torch(torch: ModuleType) -> None:
    window_state.state.torch = torch
    if torch.__file__:
        window_state.state.torch_root = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    in_forked_children(_leave_forked_child)
    _open_window()


@never_raise()
def _leave_forked_child() -> None:
    """In a forked child (a DataLoader worker, forked inside a window): the mode comes off this thread's stack. The
    child observes nothing (the state's ``pid``) and runs none of the parent's steps, so the window would never close
    there, and every op of ``__getitem__`` and ``collate`` would pass through us for the worker's whole life."""
    if window_state.state.mode is not None and window_state.state.mode_thread == threading.get_ident():
        remove_mode(window_state.state.mode)
    window_state.state.mode_thread = None


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
            if window_state.state.window and not window_state.state.busy and os.getpid() == window_state.state.pid:
                window_state.state.busy = True
                try:
                    read = [a for a in args if isinstance(a, tensor_type)]
                    if isinstance(result, tensor_type):
                        read.append(result)
                    with op_calls.shielded(read):
                        _observe_call(func, args, kwargs, result)
                except Exception as exc:  # noqa: BLE001 - never break the user's op
                    report_once("observers-op", f"shape observer failed: {type(exc).__name__}: {exc}")
                finally:
                    window_state.state.busy = False
            return result

    skip_frames(ObserverMode.__torch_function__.__code__)
    mode = ObserverMode()
    own_mode(
        mode, lambda: window_state.state.mode is mode and window_state.state.mode_thread is not None
    )  # on while a window is open
    return mode


def _foreign_modes(torch: ModuleType) -> bool:
    """True when the program (or a library) has its own TorchFunctionMode active: we then stay off the stack."""
    from torch.overrides import _get_current_function_mode_stack

    return any(not type(mode).__module__.startswith("tensorsight") for mode in _get_current_function_mode_stack())


def _open_window(limit: int = MAX_WINDOW_OPS) -> None:
    torch = window_state.state.torch
    if torch is None or window_state.state.window:
        return
    window_state.state.window = True
    window_state.state.window_ops = 0
    window_state.state.window_limit = limit
    window_state.state.depth = 0
    window_state.state.device_checked.clear()
    if not window_state.state.handles:
        # Registered once and kept: the hooks do nothing between windows. Dynamo guards on the number of global
        # module hooks, so hooks that came and went with each window would recompile a compiled model each time.
        from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

        window_state.state.handles = [
            register_module_forward_pre_hook(_before_module),
            register_module_forward_hook(_after_module, always_call=True),
        ]
    if _foreign_modes(torch):
        report_once("observers-foreign-mode", "another TorchFunctionMode is active: per-line shapes limited to modules")
        return
    if window_state.state.mode is None:
        window_state.state.mode = _make_mode(torch)
    from torch.overrides import _push_mode

    _push_mode(window_state.state.mode)
    window_state.state.mode_thread = threading.get_ident()


def _close_window() -> None:
    if not window_state.state.window:
        return
    line_shapes.flush_lines()
    window_state.state.pending.clear()  # drop the frames (and the user's values they hold) until the next window
    window_state.state.origins.clear()
    window_state.state.window = False
    window_state.state.initial = False
    window_state.state.map_recorder = None
    if window_state.state.mode_thread is not None and window_state.state.mode_thread == threading.get_ident():
        remove_mode(window_state.state.mode)
        window_state.state.mode_thread = None
    if not window_state.state.eval_seen:
        # Our global hooks (not the user's model: a hook stored on the model would travel into torch.save(model)
        # pickles) watch for the first evaluation pass from now on.
        window_state.state.eval_watch = True


def _watch_for_evaluation(module: Any) -> None:
    """Until the first evaluation pass: open a window for it (validation code runs rarely, often with bugs)."""
    torch = window_state.state.torch
    if window_state.state.window or torch is None or (module.training and torch.is_grad_enabled()):
        return
    window_state.state.eval_seen = True
    window_state.state.eval_watch = False
    _open_window(MAX_EVAL_OPS)


@never_raise()
def _on_step(step: int, optimizer: Any) -> None:
    if window_state.state.window:
        line_shapes.flush_lines()
        transfers.report_transfers()
        if not window_state.state.initial or step >= FIRST_STEPS:
            _close_window()
    elif step % window_state.state.every == 0:
        _open_window()


@never_raise()
def _on_event(event: dict[str, Any]) -> None:
    if event.get("type") == "run-finished":
        line_shapes.flush_lines()
        transfers.report_transfers()
        if window_state.state.window:
            _close_window()


# ---- per torch call ------------------------------------------------------------------------------------------------


def _observe_call(func: Any, args: Any, kwargs: dict[str, Any], result: Any) -> None:
    window_state.state.window_ops += 1
    if window_state.state.window_ops > window_state.state.window_limit:
        # A program that never steps (or a long evaluation): stop observing now; the window closes at the next module
        # call or step, since our mode cannot leave the stack from inside its own __torch_function__.
        return
    name = getattr(func, "__name__", "")
    recorder = window_state.state.map_recorder
    if recorder is not None and recorder.running:
        where = direct_user_caller(func, sys._getframe(2))
        if where is not None:
            recorder.op(func, args, result, where)  # a functional op between the modules of the first forward
    frame, through_internals = locate(sys._getframe(2), func=func)
    if frame is None:
        return
    if name in transfers.TRANSFERS:
        transfers.observe_transfer(frame, name, args, kwargs, result, through_internals)
    if through_internals:
        return
    broadcasts.check_call(frame, name, args, kwargs)
    broadcasts.note_origin(name, args, kwargs, result)
    line_shapes.note_line(frame)


# ---- module hooks --------------------------------------------------------------------------------------------------


@never_raise()
def _before_module(module: Any, args: Any) -> None:
    if transforming() or window_state.state.busy:
        return
    if not window_state.state.window:
        if not window_state.state.eval_watch:
            return
        _watch_for_evaluation(module)
        if not window_state.state.window:
            return
    if window_state.state.window_ops > window_state.state.window_limit:
        _close_window()
        return
    window_state.state.busy = True
    try:
        with op_calls.shielded(tensors_in(args)):  # reading shapes must not run a subclass's __torch_function__
            _enter_module(module, args)
    finally:
        window_state.state.busy = False


def _enter_module(module: Any, args: Any) -> None:
    depth = window_state.state.depth
    window_state.state.depth += 1
    if depth == 0 and window_state.state.map_recorder is None and id(module) not in window_state.state.mapped_roots:
        if not is_loss_module(module) and has_parameters(module):
            window_state.state.mapped_roots.add(id(module))
            window_state.state.map_recorder = ShapeMapRecorder(module, watch_ops=False)  # our mode feeds its ops
    recorder = window_state.state.map_recorder
    if recorder is not None:
        recorder.before(module, args)
    if id(module) not in window_state.state.device_checked:
        window_state.state.device_checked.add(id(module))
        transfers.check_module_devices(module, args)


@never_raise()
def _after_module(module: Any, args: Any, output: Any) -> None:
    if transforming() or window_state.state.busy or not window_state.state.window:
        return
    window_state.state.busy = True
    try:
        with op_calls.shielded(tensors_in((args, output))):
            _leave_module(module, output)
    finally:
        window_state.state.busy = False


def _leave_module(module: Any, output: Any) -> None:
    window_state.state.depth = max(0, window_state.state.depth - 1)
    recorder = window_state.state.map_recorder
    if recorder is not None:
        recorder.after(module, output)
        if module is recorder.root:
            window_state.state.map_recorder = None
            if output is not None:  # a forward that raised is explained by shape_errors instead
                _emit_shape_map(recorder)
    if output is None:
        return  # the forward raised: the explainer handles it
    if window_state.state.depth == 0 and not is_loss_module(module):
        broadcasts.note_predictions(output)
    frame, internals = locate(sys._getframe(0), from_hook=True)
    if frame is not None and not internals:
        line_shapes.note_line(frame)


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
