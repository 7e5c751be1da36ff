"""Checks on the params of TensorSight's custom requests (``tensorsight/*``), shared by every request handler.

pygls hands a custom method's params over as namedtuples (or a dict); the handlers in ``server``, ``conditions`` and
``sessions`` read them as the contract's dataclasses (``parse_params``, with ``core.protocol.parse_payload``; never
key by key), so that bad params become a JSON-RPC invalid-params error (``-32602``) for
the client, never an exception in the server.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pygls.exceptions import JsonRpcInvalidParams

from tensorsight.core import protocol

P = TypeVar("P")


def as_dict(params: Any) -> dict[str, Any]:
    """Custom-method params as a plain dict (nested namedtuples too)."""
    if params is None:
        return {}
    if isinstance(params, dict):
        return params
    if hasattr(params, "_asdict"):
        return {k: _plain(v) for k, v in params._asdict().items()}
    raise JsonRpcInvalidParams("params must be an object")


def parse_params(payload: type[P], params: Any) -> P:
    """The params as the contract's dataclass (``core.protocol.parse_payload``); invalid params otherwise."""
    parsed = protocol.parse_payload(payload, as_dict(params))
    if isinstance(parsed, protocol.ProtocolError):
        raise JsonRpcInvalidParams(str(parsed))
    return parsed


def non_empty(value: str, key: str) -> str:
    """A string param that must say something (its type is the contract's; an empty one is no better than none)."""
    if not value:
        raise JsonRpcInvalidParams(f"'{key}' must be a non-empty string")
    return value


def _plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
