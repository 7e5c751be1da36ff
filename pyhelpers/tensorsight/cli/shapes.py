"""``python -m tensorsight shapes [--json] [--model NAME] script.py [-- args...]``: the shape map of a script's model.

Runs the script in this process until its model's first forward completes (or its first optimizer step, when no
model forward was seen), records every submodule's input/output shapes, dtype, parameters and memory, then stops
the script. The editor's "Check Shapes of the model at the cursor" command calls it with ``--json`` and shows the
rows as a table: ``{"model", "file", "line", "rows": [{path, type, input_shapes, output_shapes, dtype, params,
trainable, memory_bytes, depth, calls, file?, line?, module, input_text, output_text, memory_text}], "totals": {params,
trainable, memory_bytes, memory_text}, "error"?, "finding"?}``. The ``*_text`` fields and ``module`` are the values
as people read them, written by ``core.notation`` like everywhere else (``f32[64, 8]``, ``1.2 MiB``, ``0 (Linear)``).

The model is the first module called from user code that has parameters and is not a loss, or with ``--model``
the first module whose class name is NAME or that a variable named NAME (``model``, ``self.encoder``) holds in the
calling code. The script's own output goes to stderr when ``--json`` is asked, so stdout stays one JSON document.
Exit status: 0 with a shape map, 1 when the script ended or failed before one was recorded, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
from types import FrameType, ModuleType
from typing import Any

from tensorsight.agent.runtime import script_runner
from tensorsight.cli import prelude
from tensorsight.core.notation import format_bytes, shape_text
from tensorsight.core.shapes import ShapeRow, format_shape_table

MAX_SHAPES_SHOWN = 3  # per cell; more inputs or outputs read "+N"


class _MapCaptured(script_runner.StopScript):
    """Raised from the forward hook to stop the script once the shape map is complete (not an Exception)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document with the rows")
    parser.add_argument("--model", metavar="NAME", help="class name or variable name of the model to map")
    prelude.add_script_arguments(
        parser, "the training script to run until its model's first forward", args_after_dashes=True
    )


def _holds(frame: FrameType | None, name: str, module: Any) -> bool:
    """Does ``name`` (``model`` or ``self.encoder``) evaluate to ``module`` in ``frame``? Reads attributes only."""
    if frame is None:
        return False
    head, *rest = name.split(".")
    for scope in (frame.f_locals, frame.f_globals):
        if head not in scope:
            continue
        value = scope[head]
        try:
            for part in rest:
                value = getattr(value, part)
        except Exception:  # noqa: BLE001 - a property of the user's object may raise
            continue
        if value is module:
            return True
    return False


class _Capture:
    """Global forward hooks that pick the model, record its shape map and stop the script."""

    def __init__(self, model_name: str | None) -> None:
        self.model_name = model_name
        self.recorder: Any = None
        self.depth = 0
        self.handles: list[Any] = []
        self.rows: list[Any] | None = None
        self.model_type: str | None = None
        self.location: tuple[str, int] | None = None

    def arm(self, torch: ModuleType) -> None:
        from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

        self.handles = [
            register_module_forward_pre_hook(self.before),
            register_module_forward_hook(self.after, always_call=True),
        ]

    def _matches(self, module: Any) -> bool:
        from tensorsight.agent.runtime.user_code import user_frame
        from tensorsight.agent.shapes.shape_map import has_parameters, is_loss_module

        if self.model_name is None:
            return self.depth == 0 and has_parameters(module) and not is_loss_module(module)
        if type(module).__name__ == self.model_name:
            return True
        return _holds(user_frame(sys._getframe(1)), self.model_name, module)

    def before(self, module: Any, args: Any) -> None:
        from tensorsight.agent.shapes.shape_map import ShapeMapRecorder

        if self.rows is None and self.recorder is None and self._matches(module):
            self.recorder = ShapeMapRecorder(module)
            self.model_type = type(module).__name__
        self.depth += 1
        if self.recorder is not None:
            self.recorder.before(module, args)

    def after(self, module: Any, args: Any, output: Any) -> None:
        self.depth = max(0, self.depth - 1)
        recorder = self.recorder
        if recorder is None:
            return
        if output is not None:
            recorder.after(module, output)
        if module is recorder.root and output is not None:
            self.finish()
            raise _MapCaptured()

    def on_step(self, step: int, optimizer: Any) -> None:
        if self.rows is None and step >= 1:
            if self.recorder is not None:
                self.finish()
            raise _MapCaptured()

    def finish(self) -> None:
        recorder, self.recorder = self.recorder, None
        if recorder is not None:
            self.rows = recorder.finish()
            root = self.rows[0] if self.rows else None
            if root is not None and root.file is not None and root.line is not None:
                self.location = (root.file, root.line)

    def partial_rows(self) -> list[Any]:
        """Rows recorded so far when the forward failed before completing."""
        if self.rows is None and self.recorder is not None:
            self.finish()
        return self.rows or []

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles = []


def shapes_text(shapes: list[list[int]], dtype: str = "") -> str:
    """``f32[64, 8]``; several tensors comma-separated, the ones past ``MAX_SHAPES_SHOWN`` as ``+N``; ``-`` for none."""
    if not shapes:
        return "-"
    shown = ", ".join(shape_text(shape, dtype or None) for shape in shapes[:MAX_SHAPES_SHOWN])
    return shown + (f" +{len(shapes) - MAX_SHAPES_SHOWN}" if len(shapes) > MAX_SHAPES_SHOWN else "")


def module_label(row: ShapeRow) -> str:
    """The module as the table names it: ``encoder.0 (Linear)``, the model's class for the root, ``F.relu ×2`` for a
    functional op."""
    if row.kind == "op":
        return row.type + (f" ×{row.calls}" if row.calls > 1 else "")
    return f"{row.path} ({row.type})" if row.path else row.type


def readable_row(row: ShapeRow) -> dict[str, Any]:
    """A row's JSON record: its raw fields and the texts of the module docstring. The rows carry one dtype, their
    output's; inputs are shown without one rather than with a guess."""
    return {
        **row.to_dict(),
        "module": module_label(row),
        "input_text": shapes_text(row.input_shapes),
        "output_text": shapes_text(row.output_shapes, row.dtype),
        "memory_text": format_bytes(row.memory_bytes),
    }


def totals(rows: list[ShapeRow]) -> dict[str, Any]:
    """The model's parameters (its root row counts its children) and the memory of the whole batch."""
    root = min(rows, key=lambda row: row.depth)
    memory = sum(row.memory_bytes for row in rows)
    return {
        "params": int(root.params),
        "trainable": int(root.trainable),
        "memory_bytes": int(memory),
        "memory_text": format_bytes(memory),
    }


def capture(path: str, args: list[str], model_name: str | None, quiet_stdout: bool) -> dict[str, Any]:
    """Run ``path`` until its model's first forward; the shape-map document (see the module docstring)."""
    from tensorsight.agent.runtime import steps
    from tensorsight.agent.runtime.lazy_import import when_imported
    from tensorsight.agent.shapes.shape_errors import explain

    cap = _Capture(model_name)
    steps.add_step_listener(cap.on_step)  # armed before torch is imported, so the same import arms its hook
    when_imported("torch", cap.arm)
    document: dict[str, Any] = {"script": os.path.abspath(path)}
    try:
        with prelude.script_output(quiet_stdout):
            outcome = script_runner.run_script(path, args)
    finally:
        cap.remove()
    if outcome.exception is not None:
        exc = outcome.exception
        findings = explain(exc) or []
        document["error"] = findings[0].message if findings else f"{type(exc).__name__}: {exc}"
        if findings:
            document["finding"] = findings[0].to_dict()
    elif outcome.error:
        document["error"] = f"the {outcome.error}"
    rows = cap.partial_rows()
    document["model"] = cap.model_type
    if cap.location is not None:
        document["file"], document["line"] = cap.location
    document["rows"] = [readable_row(row) for row in rows]
    if rows:
        document["totals"] = totals(rows)
    document["_rows"] = rows
    if not rows and "error" not in document:
        wanted = f"a module named {model_name}" if model_name else "a model forward"
        document["error"] = f"the script finished without {wanted}"
    return document


def run(args: argparse.Namespace) -> int:
    refused = prelude.check_script("shapes", args.script)
    if refused is not None:
        return refused
    from tensorsight.agent.runtime import options

    options.set_options({})
    document = capture(args.script, list(args.args), args.model, quiet_stdout=args.json)
    rows = document.pop("_rows")
    if args.json:
        prelude.write_json(document)
    else:
        if rows:
            print(format_shape_table(rows, title=f"Shape map of {document['model']} ({args.script})"))
        if document.get("error"):
            print(f"{'The forward failed' if rows else 'No shape map'}: {document['error']}")
    return 0 if rows and "error" not in document else 1
