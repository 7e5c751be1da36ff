"""Shapes per user line: once a statement that ran torch code has completed, the tensors it assigned are read from its
frame and published as ``shape`` events for the language server's inlay hints (only when a shape changes).

Fed by ``observers`` (each torch call in a window, each module's return, each step end); reads and writes
``window_state.state``.
"""

from __future__ import annotations

import linecache
import os
from types import FrameType
from typing import Any

from tensorsight.agent.runtime import events, op_calls, steps
from tensorsight.agent.shapes import window_state
from tensorsight.agent.shapes.window_state import LineRecord
from tensorsight.core import protocol
from tensorsight.core.notation import dtype_name, shape_text
from tensorsight.core.shapes import StatementTargets, statement_targets


def _statement(filename: str, line: int) -> StatementTargets:
    table = window_state.state.targets.get(filename)
    if table is None:
        table = statement_targets("".join(linecache.getlines(filename)))
        window_state.state.targets[filename] = table
    return table.get(line) or StatementTargets(line, ())


def note_line(frame: FrameType) -> None:
    """``frame`` runs torch code at its current line: the statement it ran before, if another, is complete now."""
    filename = frame.f_code.co_filename
    statement = _statement(filename, frame.f_lineno)
    full = window_state.state.full_paths.get(filename)
    if full is None:
        full = window_state.state.full_paths[filename] = os.path.abspath(filename)
    key = (full, statement.anchor)
    if statement.names and key not in window_state.state.lines:
        window_state.state.lines[key] = LineRecord(key[0], key[1], statement.names)
    previous = window_state.state.pending.get(frame.f_code)
    if previous is not None and (previous[0] is not frame or previous[1] != key):
        _finish_line(*previous)
    if statement.loop is not None and (previous is None or previous[1] != key):
        # a ``for`` header runs no torch code of its own when a DataLoader yields the batch: its targets are read
        # here, at the first line of its body that runs torch code, before anything can reassign them
        header = (key[0], statement.loop)
        if header not in window_state.state.lines:
            names = _statement(filename, statement.loop).names
            window_state.state.lines[header] = LineRecord(header[0], header[1], names)
        _finish_line(frame, header)
    window_state.state.pending[frame.f_code] = (frame, key)


def _finish_line(frame: FrameType, key: tuple[str, int]) -> None:
    record = window_state.state.lines.get(key)
    if record is not None:
        assigned = _assigned_tensors(frame, record.names)
        with op_calls.shielded([t for _, t in assigned]):  # reading shapes must not run a subclass's __torch_function__
            _emit_line(record, assigned)


def _assigned_tensors(frame: FrameType, names: tuple[str | None, ...]) -> list[tuple[str, Any]]:
    """The (name, tensor) pairs among a statement's targets, as the frame holds them now (after the statement ran)."""
    torch = window_state.state.torch
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


def _emit_line(record: LineRecord, assigned: list[tuple[str, Any]]) -> None:
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


def flush_lines() -> None:
    """Publish the statements whose frames have moved on (or returned); a statement still running stays pending."""
    for code, (frame, key) in list(window_state.state.pending.items()):
        if (
            os.path.abspath(frame.f_code.co_filename),
            _statement(frame.f_code.co_filename, frame.f_lineno).anchor,
        ) != key:
            _finish_line(frame, key)
            del window_state.state.pending[code]
