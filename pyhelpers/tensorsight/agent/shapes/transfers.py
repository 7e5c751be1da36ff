"""Device mistakes: the same data moved with ``.to()``/``.cuda()``/``.cpu()`` in two or more steps (the transfer
belongs before the loop), and a module fed inputs on another device than its parameters. The same data is the same
live tensor at the same ``_version``, or a tensor made afresh each step over memory it borrows, unchanged, from
outside torch (``torch.from_numpy(WEIGHTS)`` of one numpy array: a storage torch cannot resize). Transfers made inside
another library, and transfers of one number, are not the user's to move.

Fed by ``observers`` (each transfer call in a window, each module's first call, each step end); reads and writes
``window_state.state``.
"""

from __future__ import annotations

import os
import sys
import weakref
from types import FrameType
from typing import Any

from tensorsight.agent.runtime import events, op_calls, steps
from tensorsight.agent.shapes import window_state
from tensorsight.agent.shapes.shape_map import tensor_bytes, tensors_in
from tensorsight.agent.shapes.window_state import LIB, USER, file_kind, locate, report
from tensorsight.core.devices import device_issues, repeated_transfer_message
from tensorsight.core.findings import Finding
from tensorsight.core.notation import format_bytes

TRANSFERS = {"to", "cuda", "cpu"}


def _is_device_call(name: str, args: Any, kwargs: dict[str, Any]) -> bool:
    torch = window_state.state.torch
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
    torch_root = window_state.state.torch_root
    while frame is not None:
        code = frame.f_code
        if not op_calls.is_op_call(code):
            kind = file_kind(code.co_filename)
            if kind == USER:
                return False
            if kind == LIB and not window_state.state.full_paths.setdefault(
                code.co_filename, os.path.abspath(code.co_filename)
            ).startswith(torch_root):
                return True
        frame = frame.f_back
    return False


BORROWED_CONTENT_LIMIT = 1 << 20  # bytes of borrowed memory whose content is hashed into its key


def _borrowed_key(t: Any) -> tuple[Any, ...] | None:
    """Identity of data a fresh tensor borrows from outside torch (a numpy array's buffer): its address, layout and
    content, so a numpy buffer refilled with each batch is new data at each step; None for torch's own memory."""
    try:
        storage = t.untyped_storage()
        if storage.resizable() or t.device.type != "cpu" or t.requires_grad:
            return None
        nbytes = int(storage.nbytes())
        if nbytes > BORROWED_CONTENT_LIMIT:
            return None
        content = hash(bytes(t.detach().contiguous().numpy().tobytes()))
        return ("borrowed", int(storage.data_ptr()), str(t.dtype), tuple(t.shape), tuple(t.stride()), content)
    except Exception:  # noqa: BLE001 (a layout numpy cannot read: keyed by identity instead)
        return None


def _source_key(t: Any) -> tuple[Any, ...]:
    """Identity of the data moved: the same live tensor object with the same ``_version`` is the same data, and so is
    a fresh tensor over the same unchanged borrowed memory (``_borrowed_key``)."""
    borrowed = _borrowed_key(t)
    if borrowed is not None:
        return borrowed
    ref_and_gen = window_state.state.sources.get(id(t))
    if ref_and_gen is None or ref_and_gen[0]() is not t:
        window_state.state.generation += 1
        try:
            ref_and_gen = (weakref.ref(t), window_state.state.generation)
        except TypeError:
            return (id(t), -1, 0)
        window_state.state.sources[id(t)] = ref_and_gen
    return (id(t), ref_and_gen[1], int(getattr(t, "_version", 0)))


def observe_transfer(frame: FrameType, name: str, args: Any, kwargs: dict[str, Any], result: Any, inner: bool) -> None:
    torch = window_state.state.torch
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
    if src == dst and window_state.state.depth > 0:
        return  # ``.to(x.device)`` inside forward: a no-op that stays a no-op once the model is on the accelerator
    window_state.state.transfers.record(
        os.path.abspath(frame.f_code.co_filename),
        frame.f_lineno,
        _source_key(source),
        steps.current_step(),
        tensor_bytes(source),
        src,
        dst,
    )


def report_transfers() -> None:
    for file, line, info in window_state.state.transfers.repeated(min_steps=2):
        key = ("device", file, line)
        if key in window_state.state.reported:
            continue
        window_state.state.reported.add(key)
        message = repeated_transfer_message(info, format_bytes(info["nbytes"]))
        events.emit_finding(Finding("device", "warning", message, file, line, steps.current_step(), None, dict(info)))


def check_module_devices(module: Any, args: Any) -> None:
    own = {name: str(p.device) for name, p in module.named_parameters(recurse=False)}
    if not own:
        own = {name: str(b.device) for name, b in module.named_buffers(recurse=False)}
    if not own:
        return
    inputs = [(f"input {i}", str(t.device)) for i, t in enumerate(tensors_in(args, limit=8))]
    issues = [i for i in device_issues(own, inputs, model_name=type(module).__name__) if i.subject.startswith("input")]
    if not issues:
        return
    frame, _ = locate(sys._getframe(0), from_hook=True)
    if frame is None:
        return
    first = issues[0]
    report(
        "device",
        frame,
        f"{first.message} ({len(issues)} input(s) affected)" if len(issues) > 1 else first.message,
        {"module": type(module).__name__, "input_device": first.device, "module_device": first.expected},
        severity="error",
    )
