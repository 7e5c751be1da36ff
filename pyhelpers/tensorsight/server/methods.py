"""The custom LSP methods between the TensorSight extension and this server (names and payloads in one place).

The extension (``extension/``) calls the requests and consumes the notifications; README.md in this folder documents
each payload. Keep these names stable: the TypeScript client hard-codes them.
"""

from __future__ import annotations

# requests, client -> server
START_SESSION = "tensorsight/startSession"  # {sessionId} -> {address: "127.0.0.1:PORT", token}
END_SESSION = "tensorsight/endSession"  # {sessionId} -> {ended: bool}
VALIDATE_CONDITION = "tensorsight/validateCondition"  # {uri, line (0-based), condition} -> {undefinedNames, message}
SUGGEST_CONDITIONS = "tensorsight/suggestConditions"  # {name} -> [{label, condition, description}]

# notifications, server -> client
RUN_EVENT = "tensorsight/runEvent"  # {sessionId, event}
GPU = "tensorsight/gpu"  # {available, gpus: [...], message?}
STATUS = "tensorsight/status"  # {sessions, state, details}

# agent event types forwarded as tensorsight/runEvent (shape events become inlay hints instead: too many to forward)
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
