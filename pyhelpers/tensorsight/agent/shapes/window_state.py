"""What the shape and device observers remember while the program runs: whether an observation window is open, the
user lines seen in it, the origins of tensors, the transfers and the findings already reported, and which files are
the user's.

Shared by ``observers`` (the windows, the torch function mode and the module hooks) and the three detectors it feeds:
``line_shapes`` (shapes per user line), ``broadcasts`` (silent broadcasting) and ``transfers`` (device mistakes).
Each reads ``state`` when called, so a test can swap in a fresh one.
"""

from __future__ import annotations

import os
from types import FrameType, ModuleType
from typing import Any

from tensorsight.agent.runtime import events, op_calls, steps
from tensorsight.agent.runtime.untraced_hooks import is_hook_wrapper
from tensorsight.agent.runtime.user_code import PACKAGE_ROOT, is_user_file
from tensorsight.agent.shapes.shape_map import ShapeMapRecorder
from tensorsight.core.devices import TransferLog
from tensorsight.core.findings import Finding
from tensorsight.core.protocol import option_default
from tensorsight.core.shapes import StatementTargets

DEFAULT_EVERY: int = option_default("observeShapesEvery")
MAX_WINDOW_OPS = 100_000

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
USER, OURS, LIB, SKIP = 0, 1, 2, 3
_DEBUGGER_MARK = os.sep + "debugpy" + os.sep


class Origin:
    """Where a tensor seen in a window came from: a model's output (``prediction``: the model called from the user's
    code, or a batch-preserving op of one), and/or a reduction that dropped dims (``reduced``: source shape, dims,
    op name). Held by a weak reference to the tensor, never the tensor itself."""

    __slots__ = ("prediction", "reduced", "ref")

    def __init__(self, ref: Any) -> None:
        self.ref = ref
        self.prediction = False
        self.reduced: tuple[tuple[int, ...], tuple[int, ...], str] | None = None


class LineRecord:
    """An assignment line that ran torch code in a window: its target names and the text last published for it."""

    __slots__ = ("emitted", "file", "line", "names")

    def __init__(self, file: str, line: int, names: tuple[str | None, ...]) -> None:
        self.file = file
        self.line = line
        self.names = names
        self.emitted: str | None = None


class WindowState:
    """One process's observation state (a forked child starts from its parent's copy and observes nothing)."""

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
        self.lines: dict[tuple[str, int], LineRecord] = {}
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
        self.origins: dict[int, Origin] = {}


state = WindowState()


# ---- which code is the user's --------------------------------------------------------------------------------------


def file_kind(filename: str) -> int:
    kind = state.file_kinds.get(filename)
    if kind is None:
        full = os.path.abspath(filename) if filename and not filename.startswith("<") else filename
        if full.startswith(_PACKAGE_ROOT) or _DEBUGGER_MARK in full or "pydevd" in os.path.basename(full):
            kind = OURS  # our code and the debugger's (console evaluations, variable views) are not the program
        elif is_user_file(filename):
            kind = USER
        elif any(part in full for part in _SKIP_PATH_PARTS):
            kind = SKIP
        else:
            kind = LIB
        state.file_kinds[filename] = kind
    return kind


def locate(frame: FrameType | None, from_hook: bool = False, func: Any = None) -> tuple[FrameType | None, bool]:
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
        kind = file_kind(code.co_filename)
        if kind == OURS:
            passing_on = (
                func is not None and code.co_name == "__torch_function__" and frame.f_locals.get("func") is func
            )
            if not leading and not passing_on:
                return None, True
        else:
            leading = False
            if kind == USER:
                return frame, skipped
            if kind == SKIP or code.co_name in _SKIP_FUNCTIONS:
                skipped = True
        frame = frame.f_back
    return None, skipped


def report(
    kind: str,
    frame: FrameType,
    message: str,
    details: dict[str, Any],
    severity: str = "warning",
    at: tuple[str, int] | None = None,
) -> None:
    """Publish a finding at ``frame``'s line (or at ``at``), once per kind and place."""
    file, line = at if at is not None else (os.path.abspath(frame.f_code.co_filename), frame.f_lineno)
    key = (kind, file, line)
    if key in state.reported:
        return
    state.reported.add(key)
    events.emit_finding(Finding(kind, severity, message, file, line, steps.current_step(), None, details))
