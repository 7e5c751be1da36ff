"""The sentinel's switches and per-thread bookkeeping, shared by its sections (boundaries, outside, backward, replay,
records). Nothing here runs torch code: torch objects are held as opaque values."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from tensorsight.agent.sentinel.record import NonFiniteRecord

MAX_SAVED_CALLS = 8  # outermost module calls remembered per step for a backward replay
MAX_SAVED_GRAD_ELEMENTS = 1 << 22  # larger output gradients are not kept; the replay then starts from ones


@dataclass
class Call:
    """One outermost module call this step: enough to replay it (inputs, RNG state, autocast) and the gradient that
    came back to its outputs."""

    module: Any
    rng: Any
    cuda_rng: list[Any] | None
    autocast: list[tuple[str, Any]]
    grad_enabled: bool
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    output_grads: dict[int, Any] = field(default_factory=dict)
    output_nodes: dict[Any, Any] = field(default_factory=dict)  # autograd node -> the output it made (checked finite)


@dataclass
class Step:
    """The last ``optimizer.step()``: which, where it was called, and whether it started from finite gradients."""

    number: int
    optimizer: Any  # weak reference
    where: Any  # (file, line, id(frame), code) of the user's call, or None
    grads_finite: bool


class ThreadState(threading.local):
    def __init__(self) -> None:
        self.depth = 0  # nesting of module calls (outside replays)
        self.in_step = 0  # inside optimizer.step()
        self.library = 0  # inside torch code whose ops are not the program's: a DataLoader fetch past the first ones
        # (``batches``), ``zero_grad``; the outside-modules mode stays off the stack
        self.mode_on = False  # our outside-modules mode is on this thread's stack
        self.busy = False  # inside our own checking, replay or stop: hooks stand aside
        self.replay: object | None = None  # the ReplayMode running on this thread (sentinel.replay), if any
        self.stack: list[Any] = []  # modules entered during a replay
        self.calls: list[Call] = []
        self.open_calls: list[Call] = []
        self.step_number = 0
        self.grads_finite = True
        self.last_step: Step | None = None
        self.started = False  # the program called a module: training has begun (the outside mode may join)
        self.module_periods = 0  # outermost module calls since the last backward(): none makes backward() a boundary
        self.observing = True  # this step's ops outside modules are checked op by op (see sentinel.budget)
        self.passthrough = False  # the mode is on the stack but this long stretch is over budget: ops pass straight on
        self.leave_watches: list[Any] = []  # weak references to passed-on results (``outside._watch_release``)


class Switches:
    """Process-wide state: whether the sentinel is armed, whether it already reported, what it keeps between hooks."""

    def __init__(self) -> None:
        self.enabled = False
        self.origin = "debugger"
        self.installed = False
        self.handles: list[Any] = []
        self.patches: Any = None  # the ``backward()`` boundary's wrappers (``runtime.patches.Patches``)
        self.first_reported = False
        self.last: NonFiniteRecord | None = None
        self.pending: tuple[NonFiniteRecord, Any] | None = None  # a backward birth waiting for backward() to return
        self.mode: Any = None  # the outside-modules TorchFunctionMode
        self.known_roots: list[Any] = []  # weak references to recent outermost modules (for parameter names)
        self.explained_inf: dict[int, tuple[int, int]] = {}  # module id -> (+Inf, -Inf) its output holds by design
        self.cuda_present = False
        self.tensor_type: Any = ()  # torch.Tensor once torch is imported (isinstance against () is always False)


st = ThreadState()
sw = Switches()
lock = threading.RLock()


def silenced() -> bool:
    """After the first birth of this arming the sentinel goes quiet: everything downstream is NaN anyway, and
    ``break_on_nonfinite(True)`` re-arms it."""
    return sw.first_reported
