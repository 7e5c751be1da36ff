"""The training-step phases (``core.phases.PHASES``) as a person reads them, in the display language.

The code lens's breakdown (``server.runtime_view``) and a NaN report's "forward, step 5" (``agent.sentinel.records``)
name the phases in the words of the training panel's legend (extension/src/panel/trainingPanel.ts), so a Spanish
editor reads "propagación" in all three. Apart from ``core.phases`` because ``core.l10n`` reads ``core.protocol``,
which reads ``core.phases``.
"""

from __future__ import annotations

from tensorsight.core.l10n import mark, t

PHASE_LABELS = {
    "data": mark("data"),
    "forward": mark("forward"),
    "backward": mark("backward"),
    "optimizer": mark("optimizer"),
    "other": mark("other"),
}


def phase_label(phase: str) -> str:
    """``phase`` (a ``PHASES`` name) in the display language; any other name (a user's own phase) as it is."""
    label = PHASE_LABELS.get(phase)
    return t(label) if label is not None else phase
