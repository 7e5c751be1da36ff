"""Turns an exception raised by the user's program into findings, through explainers that features register.

For example the shape feature explains ``mat1 and mat2 shapes cannot be multiplied`` with the module path, the
operands and the user's line. The doctor calls ``explain`` on an uncaught exception; the debugger side calls it from
the agent's exception hook.
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.findings import Finding
from .guard import report_once

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
