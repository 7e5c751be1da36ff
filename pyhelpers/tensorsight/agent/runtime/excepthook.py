"""Turns an exception raised by the user's program into findings, through explainers that features register.

For example the shape feature explains ``mat1 and mat2 shapes cannot be multiplied`` with the module path, the
operands and the user's line. The doctor calls ``explain`` on an uncaught exception; the debugger side calls it from
the agent's exception hook.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from tensorsight.agent.runtime.events import emit_finding
from tensorsight.agent.runtime.guard import report_once
from tensorsight.core.findings import Finding

Explainer = Callable[[BaseException], "list[Finding] | None"]

_explainers: list[Explainer] = []


def register_explainer(explainer: Explainer) -> None:
    if explainer not in _explainers:
        _explainers.append(explainer)


def explain(exc: BaseException) -> list[Finding]:
    """Findings from every explainer that recognises ``exc``; explainer failures are reported once and skipped."""
    found: list[Finding] = []
    for explainer in list(_explainers):
        try:
            found.extend(explainer(exc) or [])
        except Exception as err:  # noqa: BLE001
            report_once(f"explainer-{id(explainer)}", f"exception explainer failed: {type(err).__name__}: {err}")
    return found


_hook_installed = False


def install_excepthook() -> None:
    """In a debug session, publish the findings for an uncaught exception (the doctor calls ``explain`` itself).

    Chains to the previous hook, so the traceback still prints and debugpy's own handling is unchanged.
    """
    global _hook_installed
    if _hook_installed:
        return
    _hook_installed = True
    previous = sys.excepthook

    def hook(exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            for finding in explain(exc):
                emit_finding(finding)
        except Exception as err:  # noqa: BLE001
            report_once("agent-excepthook", f"explaining the uncaught exception failed: {err!r}")
        previous(exc_type, exc, tb)

    sys.excepthook = hook


def arm(origin: str = "debugger") -> None:
    """Feature entry point (``agent.runtime.install``): the hook is armed in debug sessions only."""
    if origin == "debugger":
        install_excepthook()
