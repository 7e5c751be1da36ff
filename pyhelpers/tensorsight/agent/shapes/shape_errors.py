"""Explains a shape or device error raised by the user's program, from its traceback alone (nothing re-executed).

Registered by ``observers.arm`` with ``exceptions.register_explainer``; the doctor calls it on an uncaught exception
and the observers' exception hook calls it in a debug session. From the traceback it reads:
- the modules being executed (the ``self`` of torch's ``Module._call_impl`` frames, outermost first), hence the
  innermost module's path from the root model (``encoder.2``) and its configuration (``Linear(in_features=16...)``);
- the operands: the tensors the innermost module's ``forward`` received and its weight, or, for an error on a plain
  line of user code, the tensors that line names;
- the user's source line (the innermost frame of user code, never torch's).
"""

from __future__ import annotations

import ast
import linecache
import os
import sys
from types import FrameType, TracebackType
from typing import Any

from tensorsight.agent.runtime.user_code import is_user_file
from tensorsight.agent.runtime.user_libs import is_module, is_tensor, loaded_torch
from tensorsight.agent.shapes.shape_map import module_label
from tensorsight.core.devices import parse_device_error
from tensorsight.core.findings import Finding
from tensorsight.core.l10n import t
from tensorsight.core.notation import shape_text
from tensorsight.core.shapes import parse_shape_error

MAX_NAMED_MODULES = 20_000


def _frames(tb: TracebackType | None) -> list[tuple[FrameType, int]]:
    out = []
    while tb is not None:
        out.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return out


def _describe(t: Any) -> str:
    try:
        text = shape_text(tuple(t.shape), t.dtype)
        return text if t.device.type == "cpu" else f"{text} on {t.device}"
    except Exception:  # noqa: BLE001
        return type(t).__name__


def _module_path(root: Any, target: Any) -> str | None:
    if root is target:
        return ""
    for i, (name, module) in enumerate(root.named_modules()):
        if i > MAX_NAMED_MODULES:
            return None
        if module is target:
            return name
    return None


def _root_name(frame: FrameType | None, root: Any) -> str:
    """The variable the user's calling frame binds the root model to (``model``), else its class name."""
    if frame is not None:
        for scope in (frame.f_locals, frame.f_globals):
            for name, value in list(scope.items())[:500]:
                if value is root and not name.startswith("_"):
                    return name
            self_obj = scope.get("self")
            if self_obj is not None:
                for name, value in list(getattr(self_obj, "__dict__", {}).get("_modules", {}).items())[:500]:
                    if value is root:
                        return f"self.{name}"
    return type(root).__name__


def _line_operands(frame: FrameType, lineno: int) -> list[tuple[str, Any]]:
    """Tensors named on the failing user line (plain names only: reading a variable runs no user code)."""
    source = linecache.getline(frame.f_code.co_filename, lineno).strip()
    try:
        tree = ast.parse(source.rstrip(":") if source.startswith(("for ", "if ", "while ")) else source)
    except SyntaxError:
        return []
    found: list[tuple[str, Any]] = []
    seen: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in seen:
            seen.add(node.id)
            value = frame.f_locals.get(node.id, frame.f_globals.get(node.id))
            if is_tensor(value):
                found.append((node.id, value))
    return found[:6]


def _forward_inputs(frames: list[tuple[FrameType, int]], module: Any) -> list[tuple[str, Any]]:
    """Tensor arguments of the innermost ``forward`` frame of ``module``."""
    for frame, _ in reversed(frames):
        if frame.f_code.co_name == "forward" and frame.f_locals.get("self") is module:
            code = frame.f_code
            names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
            return [(n, frame.f_locals[n]) for n in names if n != "self" and is_tensor(frame.f_locals.get(n))][:4]
    return []


def _specific_hint(module: Any, inputs: list[tuple[str, Any]]) -> str | None:
    """A fix phrased for the layer that failed (Linear features, conv channels)."""
    if module is None or not inputs:
        return None
    torch = loaded_torch()
    if torch is None:
        return None
    first = inputs[0][1]
    shape = tuple(first.shape)
    if isinstance(module, torch.nn.Linear) and shape and shape[-1] != module.in_features:
        return t(
            "the layer expects {0} input features but receives {1}: use "
            "nn.Linear({1}, {2}) or fix the previous layer's output size",
            module.in_features,
            shape[-1],
            module.out_features,
        )
    conv = getattr(torch.nn.modules.conv, "_ConvNd", None)
    if conv is not None and isinstance(module, conv) and len(shape) >= 2 and shape[1] != module.in_channels:
        return t(
            "the layer expects {0} input channels but receives {1} "
            "(input {2}): set in_channels={1} or fix the input layout to [N, C, H, W]",
            module.in_channels,
            shape[1],
            list(shape),
        )
    return None


def describe_error(exc: BaseException) -> tuple[str, str, dict[str, Any]] | None:
    """``(kind, message, details)`` for a recognised torch shape/device error, from its traceback; else None."""
    message = str(exc)
    shape_error = parse_shape_error(message)
    device_error = None if shape_error is not None else parse_device_error(message)
    if shape_error is None and device_error is None:
        return None
    frames = _frames(exc.__traceback__)
    user = _innermost_user(frames)
    modules: list[Any] = []
    caller_of_root: FrameType | None = None
    last_user_before: FrameType | None = None
    for frame, _ in frames:
        if is_user_file(frame.f_code.co_filename):
            last_user_before = frame
        if frame.f_code.co_name == "_call_impl":
            candidate = frame.f_locals.get("self")
            if is_module(candidate) and (not modules or modules[-1] is not candidate):
                if not modules:
                    caller_of_root = last_user_before
                modules.append(candidate)
    details: dict[str, Any] = {"error": message.splitlines()[0][:300]}
    where = ""
    inner = modules[-1] if modules else None
    operands: list[tuple[str, Any]] = []
    if inner is not None:
        root = modules[0]
        path = _module_path(root, inner)
        root_name = _root_name(caller_of_root, root)
        full = root_name if not path else f"{root_name}.{path}"
        where = t(" in {0} ({1})", full, module_label(inner))
        details["module"] = full
        details["module_type"] = type(inner).__name__
        operands = _forward_inputs(frames, inner)
        weight = getattr(inner, "weight", None)
        if is_tensor(weight):
            operands.append(("weight", weight))
    elif user is not None:
        operands = _line_operands(*user)
    if operands:
        details["operands"] = {name: _describe(t) for name, t in operands}
    operand_text = ", ".join(f"{name} {_describe(t)}" for name, t in operands)
    if shape_error is not None:
        hint = _specific_hint(inner, operands) or shape_error.hint
        details["shape_error"] = shape_error.kind
        if shape_error.shapes:
            details["shapes"] = {k: list(v) for k, v in shape_error.shapes.items()}
        text = t("shape error{0}: {1}", where, shape_error.summary)
        if operand_text:
            text += t("; operands: {0}", operand_text)
        return "shape", f"{text}; {hint}", details
    assert device_error is not None
    details["devices"] = list(device_error.devices)
    text = t("device mismatch{0}: {1}", where, device_error.summary)
    if operand_text:
        text += t("; operands: {0}", operand_text)
    return "device", text + t("; move the inputs (or the model) with .to(device) so they share one device"), details


def _innermost_user(frames: list[tuple[FrameType, int]]) -> tuple[FrameType, int] | None:
    user = [(f, line) for f, line in frames if is_user_file(f.f_code.co_filename)]
    return user[-1] if user else None


def explain(exc: BaseException) -> list[Finding] | None:
    """A ``shape`` or ``device`` finding at the user's line for a recognised torch error; None otherwise."""
    user = _innermost_user(_frames(exc.__traceback__))
    if user is None:
        return None
    described = describe_error(exc)
    if described is None:
        return None
    kind, text, details = described
    frame, line = user
    return [
        Finding(
            kind=kind,
            severity="error",
            message=text,
            file=os.path.abspath(frame.f_code.co_filename),
            line=line,
            step=_current_step(),
            details=details,
        )
    ]


def _current_step() -> int | None:
    steps = sys.modules.get("tensorsight.agent.runtime.steps")
    if steps is None:
        return None
    step = int(steps.current_step())
    return step
