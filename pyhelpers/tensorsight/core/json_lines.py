"""The runtime hub's wire codec: one JSON object per line, UTF-8, each with a string ``type``.

Both ends of the hub use it and nothing else: the agent (``agent/runtime/hub_client.py``) encodes its hello and
events and decodes the hub's answer; the server (``server/hub.py``) decodes hellos and events and encodes its answer.
The message shapes themselves are declared in ``tensorsight.core.protocol``. Stdlib only: the agent runs it inside
the user's program.

- ``encode`` never raises: a value JSON cannot carry is sent as its ``item()`` (numpy / torch scalars), a short list
  (``tolist()`` of at most four items) or its ``str``; NaN and infinities as the JSON extensions ``NaN``/``Infinity``
  (Python's ``json`` reads them back); text that is not valid UTF-8 (lone surrogates) is replaced.
- ``decode`` never raises either: it returns ``(message, None)`` for a JSON object whose ``type`` is a non-empty
  string of at most ``protocol.MAX_TYPE_LENGTH`` characters, else ``(None, reason)`` with a short reason for the log.
"""

from __future__ import annotations

import json
from typing import Any

from tensorsight.core import protocol

_SHORT_LIST = (0, 1, 2, 3, 4)  # sizes of an array-like sent as a list rather than as its str


def encode(message: dict[str, Any]) -> bytes:
    """One protocol line for `message`, newline included."""
    return (json.dumps(message, default=_carried, separators=(",", ":")) + "\n").encode("utf-8", "replace")


def decode(line: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """``(message, None)`` for a JSON object with a non-empty string ``type``; ``(None, reason)`` otherwise."""
    try:
        value = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "not UTF-8"
    except ValueError as exc:
        return None, f"not JSON ({exc.args[0] if exc.args else exc})"
    except RecursionError:
        return None, "JSON nested too deeply"
    if not isinstance(value, dict):
        return None, f"a JSON {type(value).__name__}, not an object"
    kind = value.get("type")
    if not isinstance(kind, str) or not kind or len(kind) > protocol.MAX_TYPE_LENGTH:
        return None, "no 'type'"
    return value, None


def _carried(value: Any) -> Any:
    """What ``json`` sends for a value it cannot encode itself."""
    item = getattr(value, "item", None)  # numpy / torch scalars
    if callable(item):
        try:
            result = item()
            if isinstance(result, (int, float, bool, str)):
                return result
        except Exception:  # noqa: BLE001 - a non-scalar tensor: fall through
            pass
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and getattr(value, "size", 1) in _SHORT_LIST:
        try:
            return tolist()
        except Exception:  # noqa: BLE001
            pass
    return str(value)
