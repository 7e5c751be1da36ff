"""Installs the agent into the current process: the ``tensorsight`` builtin and each armed feature.

Called once from the pydevd plugin's ``on_debugger_modules_loaded`` (before user code runs) and by the headless
doctor. Each feature is a module in this package exposing ``arm(origin: str) -> None``; a feature module that is
missing or fails to arm is reported once and skipped, so one broken feature never takes the others (or the user's
program) down.
"""

from __future__ import annotations

import builtins
import importlib

from .guard import never_raise, report_once

# Order matters: the hub client first, so that every later feature's events can reach the editor.
FEATURES = (
    "hub_client",  # connects lazily to the language server's runtime hub
    "conditions",  # state for breakpoint predicates (tensorsight.nan(...), spike(...))
    "sentinel",  # breakOnNonFinite: stop at the first op that produces NaN/Inf
    "observers",  # observed shapes per source line, device mismatches, silent broadcasting
    "measurement",  # phase timings, memory, training log, TensorBoard, curve diagnosis
    "leakage_watch",  # train/val/test overlap checks on the splits a script builds
    "distributed",  # rank awareness under torch.distributed / torchrun
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
    for name in FEATURES:
        _arm(name, origin)
    if origin == "debugger":
        from .exceptions import install_excepthook

        install_excepthook()


def _arm(name: str, origin: str) -> None:
    module_name = f"{__package__}.{name}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return  # feature not shipped in this build
        report_once(f"arm-{name}", f"feature {name} unavailable: {exc}")
        return
    except Exception as exc:  # noqa: BLE001
        report_once(f"arm-{name}", f"feature {name} failed to load: {type(exc).__name__}: {exc}")
        return
    arm = getattr(module, "arm", None)
    if arm is None:
        return
    try:
        arm(origin)
    except Exception as exc:  # noqa: BLE001
        report_once(f"arm-{name}", f"feature {name} failed to arm: {type(exc).__name__}: {exc}")
