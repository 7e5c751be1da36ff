"""Samples of the custom requests' payloads (params and answers) and of the hub handshake, built from the contract's
dataclasses; written to ``tests/fixtures/payloads.json`` for the TypeScript side.

The fixture holds, per payload interface, values that must parse (``accepted``: built from the dataclasses, as the
server and the tools write them) and values that must be refused with the field at fault (``refused``: the error
names it). ``tests/core/test_payload_samples.py`` checks them with ``core.protocol.parse_payload`` and keeps the
fixture current; ``tests/extension/protocol.test.ts`` checks them with the generated ``parsePayload``: both sides take
and refuse the same. Rewrite it after changing the contract: ``.venv/bin/python tests/support/payload_samples.py``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "pyhelpers")
)

from tensorsight.core import protocol

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "payloads.json")
FILE = "/project/train.py"

FINDING = protocol.ReportedFinding(
    kind="dynamics", severity="warning", message="loss diverged", file=FILE, line=40, step=31, rank=1
)
ACCEPTED: tuple[Any, ...] = (
    FINDING,
    protocol.ReportedFinding(
        kind="training-logic", severity="error", message="m", file=FILE, line=3, details={"code": "TS104"}
    ),
    protocol.ToolFindingsParams(tool="doctor", findings=[FINDING]),
    protocol.ToolFindingsResult(accepted=1),
    protocol.SuggestConditionsParams(name="loss"),
    protocol.SuggestConditionsParams(name="x", uri="file:///project/train.py", line=9, kindHint="tensor", shape=[2, 3]),
    protocol.ConditionSuggestion(label="NaN or Inf", condition="tensorsight.nan(loss)", description="stops on NaN"),
    protocol.ValidateConditionResult(
        undefinedNames=["los"], message="'los' is not defined", syntaxError=None, sideEffects=[], available=True
    ),
    protocol.StartSessionResult(address="127.0.0.1:5000", token="t"),
    protocol.EndSessionResult(ended=True),
)

# (payload, value, the field the error must name)
REFUSED: tuple[tuple[type[Any], dict[str, Any], str], ...] = (
    (protocol.ReportedFinding, {**protocol.to_wire(FINDING), "severity": "fatal"}, "severity"),  # type: ignore[arg-type]
    (protocol.ReportedFinding, {"kind": "shape", "severity": "error", "file": FILE, "line": 1}, "message"),
    (protocol.ReportedFinding, {**protocol.to_wire(FINDING), "step": "31"}, "step"),  # type: ignore[arg-type]
    (protocol.ToolFindingsParams, {"findings": []}, "tool"),
    (protocol.SuggestConditionsParams, {"name": "x", "shape": [2, "3"]}, "shape[1]"),
    (protocol.ConditionSuggestion, {"label": "a", "condition": 3, "description": ""}, "condition"),
    (protocol.ToolFindingsResult, {"accepted": 1.5}, "accepted"),
)


def as_wire(value: Any) -> dict[str, Any]:
    return protocol.to_wire(value)  # type: ignore[arg-type] - any payload dataclass, as the events


def as_fixture() -> dict[str, Any]:
    accepted: dict[str, list[dict[str, Any]]] = {}
    for sample in ACCEPTED:
        accepted.setdefault(type(sample).__name__, []).append(as_wire(sample))
    refused = [{"payload": cls.__name__, "value": value, "field": name} for cls, value, name in REFUSED]
    return {"accepted": accepted, "refused": refused}


def render() -> str:
    return json.dumps(as_fixture(), indent=2) + "\n"


if __name__ == "__main__":
    with open(FIXTURE, "w", encoding="utf-8") as out:
        out.write(render())
