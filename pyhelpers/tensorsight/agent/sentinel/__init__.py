"""The NaN sentinel (``breakOnNonFinite``): stop at the op where the first NaN/Inf is born, in the user's frame.

Armed by the launch option ``breakOnNonFinite`` (the doctor arms it by default) or at run time by
``tensorsight.break_on_nonfinite(True)`` (the editor's toggle sends it through a DAP ``evaluate``). No code change.

What "born" means. An op is the producer when its output holds a NaN while no input did, or an Inf while every input
was finite. Later ops that merely carry the value along are not reported, and neither are deliberate values: an input
that is itself ``-inf`` (an attention mask, ``float("nan")`` written in code) is an input like any other. A tensor
built from outside data (a numpy array) that holds NaN/Inf is born at that conversion, in the "data" phase.

How it stays cheap (design: a global module hook cost 1.0–1.09×, an op-level TorchFunctionMode 1.13–1.24×, and an
empty mode alone 1.7× on tiny ops). Two tiers, one section each:

- ``boundaries``: always on, at the boundaries of a training step, through global module and optimizer hooks: the
  outputs of outermost module calls, the gradients once before each ``optimizer.step()``, and the parameters it
  produced at the next forward. Each check is one sum per tensor on the CPU, elsewhere one reduction and one sync
  per group of tensors (``reading.fast_suspects``).
- ``outside``: ops outside any module (the loss written by hand, data conversion), checked op by op by a
  TorchFunctionMode that is on the stack only between module calls and optimizer steps of observed steps (``budget``:
  the first 50 steps, then every step while that costs little; the doctor observes all), so model internals and
  torch code before training pay nothing per op. Ops run from the user's line (warnings keep their location) and
  our reads never run a tensor subclass's ``__torch_function__`` (``runtime.op_calls``).
- ``replay``: only when a boundary check fails, the failing outermost module's forward runs again, op by op, on a
  private copy of the module and its inputs with the RNG state it had (forked), when ``containment`` vouches that it
  reaches nothing outside that copy; the first op whose output is born non-finite is where the debugger stops.
- ``backward``: a gradient born inside a module is found by replaying backward from the gradient that arrived at the
  module's output, with a hook on every autograd node; outside modules, by a hook on each op's node.
- ``graph_search``, ``sites``, ``call_replay``: the stop does not depend on which steps were observed. Before
  ``backward()`` runs, the loss is checked (one sum, ``boundaries``); a NaN/Inf there that the mode did not see at
  its op is located in the loss's autograd graph from the values its nodes saved (no program code runs), named at
  the line the mode saw make such a node in an observed step (``sites``), and stopped at in the frame still running
  that line, or, when the function that ran it has returned, in a replay of that call on private copies of its
  arguments (``call_replay``).
- ``batches``: a DataLoader's batch is checked once when it is handed over (one sum per floating-point tensor): a
  NaN/Inf made in a worker, in a fetch not checked op by op (past the first few, fetches run without the mode), or
  before training is reported at the ``for`` line as data that came in, naming the dataset's ``__getitem__``.
- ``numpy_warnings``: data that came in already holding NaN/Inf (a ``torch.from_numpy`` or ``torch.as_tensor`` of an
  array, a model input) is reported where numpy made those values when numpy warned there ("divide by zero
  encountered in log" at the user's line), with the line that built the tensor beside it.
- ``records``: the report (``NonFiniteRecord``), its event and finding, and the stop.

How it stops: ``agent.debugger.pause.stop_in_frame`` presents the stop as an exception in the user's frame ("NaN
born here" and a reason naming the op, the module path, the phase, the step, the counts and the rank); Variables
shows a ``(nonfinite)`` entry with the op's inputs and output, also reachable as ``tensorsight.last_nonfinite()``.
Without a debugger (the doctor, or no client) the same report becomes a ``nonfinite`` event and a ``nonfinite``
finding. Only the first birth is reported: everything after it is its consequence, so the sentinel then goes quiet
(and costs less); ``break_on_nonfinite(True)`` re-arms it.

A good guest: the program sees the same values, RNG stream, warnings (location, filters, once-per-location) and
tensor-subclass ``__torch_function__`` calls as without TensorSight.

Limits (also in the README): code compiled by ``torch.compile`` is checked at its module boundary only; a forward
that reaches state outside its module (globals, closures, I/O, other libraries) is not replayed: the stop is then at
the module call, with the reason; with fp16 autocast, non-finite gradients are left to the GradScaler (a skipped step
is not reported); FSDP modules are not replayed; in a program whose steps are mostly tiny ops outside modules only
some steps are (a birth there that reaches a ``backward()`` is still named from the graph; a gradient born outside
modules in such a step is reported at the optimizer step, without its op); a long stretch of ops with no boundary is
checked until it has cost its share of its own time (``budget.stretch_over``).
"""

from __future__ import annotations

import types

from tensorsight.agent.debugger import pause
from tensorsight.agent.runtime.guard import never_raise, report_once, say
from tensorsight.agent.runtime.lazy_import import when_imported
from tensorsight.agent.runtime.options import option
from tensorsight.agent.sentinel import numpy_warnings
from tensorsight.agent.sentinel.boundaries import install
from tensorsight.agent.sentinel.budget import budget
from tensorsight.agent.sentinel.records import NonFiniteRecord
from tensorsight.agent.sentinel.state import lock, st, sw
from tensorsight.core.l10n import t

__all__ = ["NonFiniteRecord", "arm", "break_on_nonfinite", "last_nonfinite"]


def last_nonfinite() -> NonFiniteRecord | None:
    """The most recent NaN/Inf birth the sentinel saw in this process (None before any)."""
    return sw.last


@never_raise(fallback=False)
def break_on_nonfinite(enable: bool = True) -> bool:
    """Arm (or disarm) the sentinel at run time; returns the new state. Arming also re-arms the "stop once" latch.

    Safe to call from any thread, e.g. debugpy's command thread through a DAP ``evaluate`` without a frame: hooks are
    installed now (if torch is imported) and the outside-modules mode joins the training thread at its next module
    call.
    """
    if not isinstance(enable, bool):
        report_once("sentinel-toggle", f"tensorsight.break_on_nonfinite expects True or False, got {enable!r}")
        return sw.enabled
    with lock:
        sw.enabled = enable
        if enable:
            sw.first_reported = False
    if enable:
        numpy_warnings.install()
        when_imported("torch", install)
    say(t("break on NaN/Inf: armed") if enable else t("break on NaN/Inf: off"))
    return sw.enabled


def arm(origin: str = "debugger") -> None:
    """Read the launch option; stdlib only until the program imports torch."""
    sw.origin = origin
    budget.active = origin != "doctor"  # a diagnostic run observes every step (see sentinel.budget)
    if origin == "debugger":  # keep pydevd out of our frames (stepping, call stacks) once it is fully up
        when_imported("torch", _hide_our_frames)
    raw = option("breakOnNonFinite")
    if not isinstance(raw, bool):
        report_once("sentinel-option", f"ignoring launch option breakOnNonFinite={raw!r}: expected true or false")
        return
    if raw:
        sw.enabled = True
        numpy_warnings.install()
        when_imported("torch", install)
        when_imported("torch", _watch_from_the_first_op)


@never_raise()
def _watch_from_the_first_op(torch: types.ModuleType) -> None:
    """Ops outside modules are checked from the program's first torch op, not from its first module call, in a debug
    session as in the doctor (one engine: the same run gets the same verdict): a NaN/Inf made while the data is
    prepared (``torch.log`` of counts that hold 0), in a loss checked before training, or in a module-level loop with
    no ``nn.Module`` is found at its line. What the checks before training cost is bounded by the budget's stretch
    rule (``budget.stretch_over``)."""
    from tensorsight.agent.sentinel.outside import sync_mode

    st.started = True
    sync_mode()


def _hide_our_frames(torch: types.ModuleType) -> None:
    pause.hide_agent_files()
