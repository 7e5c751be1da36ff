"""Installs the agent into the current process: the ``tensorsight`` builtin and each armed feature.

Called once from the pydevd plugin's ``on_debugger_modules_loaded`` (before user code runs) and by the headless
doctor (``tensorsight.cli``). ``FEATURES`` names every feature module in full; each exposes ``arm(origin: str)``. A
feature that fails to import or to arm is reported once, loudly (Debug Console, hub), and skipped, so one broken
feature never takes the others (or the user's program) down; a feature module that is missing is such a failure,
never a silent "not in this build". This module imports no feature at import time.
"""

from __future__ import annotations

import builtins
import importlib

from tensorsight.agent.runtime.guard import never_raise, report_once

# Order matters: the hub client first, so that every later feature's events can reach the editor.
FEATURES = (
    "tensorsight.agent.runtime.hub_client",  # connects lazily to the language server's runtime hub
    "tensorsight.agent.runtime.transforming",  # every hook stands aside while torch compiles, traces or exports
    "tensorsight.agent.conditions.predicates",  # state for breakpoint predicates (tensorsight.nan(...), spike(...))
    "tensorsight.agent.sentinel",  # breakOnNonFinite: stop at the first op that produces NaN/Inf
    "tensorsight.agent.shapes.observers",  # observed shapes per source line, device mismatches, broadcasting
    "tensorsight.agent.measurement.pipeline",  # phase timings, memory, training log, TensorBoard, curve diagnosis
    "tensorsight.agent.leakage.watch",  # train/val/test overlap checks on the splits a script builds
    "tensorsight.agent.distributed.ranks",  # rank awareness under torch.distributed / torchrun
)
# armed only under a debugger: an attached editor's hub and options read from its attach request; debugpy's own
# waits cut (a link without Nagle's 40 ms or the 0.1 s pause, an exit without pydevd's polls, forked workers that
# need not wait for the editor, no environment report nobody logs); explains uncaught errors (shape, device, OOM)
# before the debugger reports them, times the debugger's holds, which the phase clock leaves out of each step, runs
# the agent's hooks untraced, and imports libraries and runs a DataLoader's batch plumbing untraced while nothing
# could stop there
DEBUGGER_FEATURES = (
    "tensorsight.agent.debugger.link",
    "tensorsight.agent.debugger.attach",
    "tensorsight.agent.debugger.shutdown",
    "tensorsight.agent.debugger.forked_start",
    "tensorsight.agent.debugger.environment_report",
    "tensorsight.agent.runtime.excepthook",
    "tensorsight.agent.debugger.holds",
    "tensorsight.agent.debugger.untraced",
    "tensorsight.agent.debugger.untraced_data",
)

_installed_origin: str | None = None


def installed_origin() -> str | None:
    """``"debugger"``, ``"doctor"`` or None: how (and whether) the agent was installed in this process."""
    return _installed_origin


@never_raise()
def install(origin: str = "debugger") -> None:
    """Install the builtin and arm every feature; idempotent."""
    global _installed_origin
    if _installed_origin is not None:
        return
    _installed_origin = origin
    import tensorsight

    if not hasattr(builtins, "tensorsight"):
        builtins.tensorsight = tensorsight  # type: ignore[attr-defined]
    for module_name in FEATURES + (DEBUGGER_FEATURES if origin == "debugger" else ()):
        _arm(module_name, origin)


def _arm(module_name: str, origin: str) -> None:
    name = module_name.rsplit(".", 1)[-1]
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001
        report_once(f"arm-{name}", f"feature {module_name} failed to load: {type(exc).__name__}: {exc}")
        return
    arm = getattr(module, "arm", None)
    if arm is None:
        report_once(f"arm-{name}", f"feature {module_name} has no arm(origin) function")
        return
    try:
        arm(origin)
    except Exception as exc:  # noqa: BLE001
        report_once(f"arm-{name}", f"feature {name} failed to arm: {type(exc).__name__}: {exc}")
