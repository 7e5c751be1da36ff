"""The contract's codec: payload dataclasses to the wire and back, the same rules for every message.

``to_wire`` writes a payload (an event, a request's params or answer) as JSON carries it; ``parse_payload`` reads a
received dict back into its dataclass or a ``ProtocolError``; ``json_safe`` makes NaN/Infinity carriable. The types a
field may have and the rules (optional fields, ``X | None``, ``DROPS_MALFORMED`` lists) are described in ``events``.
Used by ``events`` and ``requests`` and, through ``tensorsight.core.protocol``, by the agent, the server and the
generator. Pure and stdlib only.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass
from types import UnionType
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints


def to_wire(event: Any) -> dict[str, Any]:
    """The data of ``event`` (or any payload dataclass) as the bus sends it (``type``/``pid``/``time`` are added
    there): nested dataclasses as dicts, and an optional field left out when it is None (and so is ``rank``, ``pid``,
    ``time`` when unset)."""
    data: dict[str, Any] = {}
    for f in fields(event):
        value = getattr(event, f.name)
        if value is None and _optional(f):
            continue
        data[f.name] = _wire_value(value)
    return data


def _wire_value(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _wire_value(getattr(value, f.name))
            for f in fields(value)
            if getattr(value, f.name) is not None or not _optional(f)
        }
    if isinstance(value, list):
        return [_wire_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _wire_value(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class ProtocolError:
    """Why a received dict is not a valid event: the event's type (when it had one) and the first problem found."""

    event_type: str | None
    reason: str

    def __str__(self) -> str:
        return f"malformed {self.event_type} event: {self.reason}" if self.event_type else self.reason


_Payload = TypeVar("_Payload")


def parse_payload(cls: type[_Payload], message: Mapping[str, Any]) -> _Payload | ProtocolError:
    """A request's params (or any payload dataclass of this module) read from a received dict, or why not: the same
    rules as ``parse_event``."""
    if not isinstance(message, Mapping):
        return ProtocolError(None, f"{cls.__name__} must be an object")
    try:
        built: _Payload = _build(cls, message, "")
        return built
    except _Invalid as exc:
        return ProtocolError(None, str(exc))


class _Invalid(Exception):
    pass


def _build(cls: type[Any], message: Mapping[str, Any], where: str) -> Any:
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in fields(cls):
        name = f"{where}{f.name}"
        if f.name not in message or (message[f.name] is None and _optional(f)):
            if not _optional(f):
                if not admits_none(hints[f.name]):
                    raise _Invalid(f"'{name}' is missing")
                values[f.name] = None
            continue
        if f.name in getattr(cls, "DROPS_MALFORMED", ()) and isinstance(message[f.name], list):
            values[f.name] = _well_formed(message[f.name], hints[f.name], name)
            continue
        values[f.name] = _value(message[f.name], hints[f.name], name)
    return cls(**values)


def _well_formed(items: list[Any], annotation: Any, name: str) -> list[Any]:
    """The items of a ``DROPS_MALFORMED`` list field that fit its item type; the others are left out."""
    (item,) = get_args(_strip_none(annotation) if admits_none(annotation) else annotation)
    kept = []
    for index, value in enumerate(items):
        try:
            kept.append(_value(value, item, f"{name}[{index}]"))
        except _Invalid:
            continue
    return kept


def _value(value: Any, annotation: Any, name: str) -> Any:
    if annotation is Any:
        return value
    origin = get_origin(annotation)
    if origin is Union or origin is UnionType:
        options = get_args(annotation)
        for option in options:
            try:
                return _value(value, option, name)
            except _Invalid:
                continue
        others = [option for option in options if option is not type(None)]
        compound = len(others) == 1 and (get_origin(others[0]) is not None or is_dataclass(others[0]))
        if compound and value is not None:
            _value(value, others[0], name)  # ``list[X] | None`` given a list: say which item is wrong
        raise _Invalid(f"'{name}' must be {_type_text(annotation)}")
    if annotation is type(None):
        if value is None:
            return None
    elif annotation is bool:
        if isinstance(value, bool):
            return value
    elif annotation is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif annotation is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
    elif annotation is str:
        if isinstance(value, str):
            return value
    elif origin is list:
        if isinstance(value, list):
            (item,) = get_args(annotation)
            return [_value(v, item, f"{name}[{i}]") for i, v in enumerate(value)]
    elif origin is dict:
        if isinstance(value, Mapping):
            _key, item = get_args(annotation)
            return {str(k): _value(v, item, f"{name}.{k}") for k, v in value.items()}
    elif origin is Literal:
        if value in get_args(annotation):
            return value
    elif isinstance(annotation, type) and is_dataclass(annotation):
        if isinstance(value, Mapping):
            return _build(annotation, value, f"{name}.")
    raise _Invalid(f"'{name}' must be {_type_text(annotation)}")


def _type_text(annotation: Any) -> str:
    """A type as an error message names it: ``an integer or null``."""
    origin = get_origin(annotation)
    if origin is Union or origin is UnionType:
        return " or ".join(_type_text(a) for a in get_args(annotation))
    if origin is Literal:
        return "one of " + ", ".join(repr(value) for value in get_args(annotation))
    words = {type(None): "null", bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    if annotation in words:
        return words[annotation]
    if origin is list:
        return "a list"
    return "an object"


def admits_none(annotation: Any) -> bool:
    """A field typed ``X | None``: the reader takes a missing key as None (the sender must still send it)."""
    return get_origin(annotation) in (Union, UnionType) and type(None) in get_args(annotation)


def _optional(f: Any) -> bool:
    return f.default is None


def _own_annotations(cls: type[Any]) -> set[str]:
    return {k for k in inspect.get_annotations(cls) if k != "TYPE"}


_HINTS: dict[type[Any], dict[str, Any]] = {}


def _hints(cls: type[Any]) -> dict[str, Any]:
    """The evaluated field types of a payload (the module's annotations are strings), computed once per class."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = get_type_hints(cls)
    return hints


def payload_fields(cls: type[Any]) -> list[tuple[str, Any, bool]]:
    """(name, evaluated type, optional) of each field of a payload, base fields first: what the generator writes."""
    hints = _hints(cls)
    return [(f.name, hints[f.name], _optional(f)) for f in fields(cls)]


def _strip_none(annotation: Any) -> Any:
    rest = tuple(a for a in get_args(annotation) if a is not type(None))
    return rest[0] if len(rest) == 1 else Union[rest]  # noqa: UP007 - built from a tuple


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
