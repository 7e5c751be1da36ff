"""The messages that cross between TensorSight's processes, defined once.

Pure and stdlib only: the agent (in the user's process), the language server and the doctor import it; the
TypeScript side gets ``extension/src/server/protocol.ts`` generated from it (``scripts/generate_protocol_ts.py``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

# ---------------------------------------------------------------------------------------------- LSP custom methods
START_SESSION = "tensorsight/startSession"
END_SESSION = "tensorsight/endSession"
VALIDATE_CONDITION = "tensorsight/validateCondition"
SUGGEST_CONDITIONS = "tensorsight/suggestConditions"
RUN_EVENT = "tensorsight/runEvent"
GPU = "tensorsight/gpu"
STATUS = "tensorsight/status"

FORWARDED_EVENT_TYPES = frozenset(
    {
        "scalars",
        "phases",
        "phase-summary",
        "histogram",
        "finding",
        "nonfinite",
        "memory",
        "log",
        "condition-error",
        "run-finished",
        "hello",
        "dropped",
        "bye",
        "tensorboard",
        "rank-state",
    }
)


def json_safe(value: Any) -> Any:
    """A copy JSON (and so JavaScript) can carry: NaN/Infinity become the strings "NaN", "Infinity", "-Infinity"."""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
