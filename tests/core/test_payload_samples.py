"""The custom requests' payloads and the hub handshake read with the contract's one parser (``parse_payload``).

tests/fixtures/payloads.json (written by tests/support/payload_samples.py) holds what must parse and what must be
refused, per payload; this side checks it with ``parse_payload`` and keeps it current, and
tests/extension/protocol.test.ts checks the same file with the generated ``parsePayload``.
"""

from __future__ import annotations

import json

import pytest

from support import payload_samples
from tensorsight.core import protocol

PAYLOADS = {cls.__name__: cls for cls in protocol.PAYLOADS}


def test_the_fixture_is_current_and_covers_the_requests_the_extension_reads():
    with open(payload_samples.FIXTURE, encoding="utf-8") as fixture:
        assert fixture.read() == payload_samples.render(), "rewrite it: python tests/support/payload_samples.py"
    covered = set(payload_samples.as_fixture()["accepted"])
    needed = {name for r in protocol.REQUESTS for name in (r.params, r.result.removesuffix("[]"))}
    assert needed - covered == {"StartSessionParams", "EndSessionParams", "ValidateConditionParams"}


@pytest.mark.parametrize("sample", payload_samples.ACCEPTED, ids=lambda s: type(s).__name__)
def test_what_the_server_and_the_tools_write_parses_back_unchanged(sample):
    wire = json.loads(json.dumps(payload_samples.as_wire(sample)))
    assert protocol.parse_payload(type(sample), wire) == sample


@pytest.mark.parametrize("refused", payload_samples.as_fixture()["refused"], ids=lambda r: r["payload"])
def test_a_malformed_payload_is_refused_naming_the_field(refused):
    parsed = protocol.parse_payload(PAYLOADS[refused["payload"]], refused["value"])
    assert isinstance(parsed, protocol.ProtocolError) and f"'{refused['field']}'" in str(parsed)


def test_a_tool_report_drops_its_malformed_findings_not_the_report():
    good = payload_samples.as_wire(payload_samples.FINDING)
    params = {"tool": "doctor", "findings": [good, {**good, "severity": "fatal"}, "not a finding", {"line": 3}]}
    parsed = protocol.parse_payload(protocol.ToolFindingsParams, params)
    assert parsed == protocol.ToolFindingsParams(tool="doctor", findings=[payload_samples.FINDING])
    not_a_list = protocol.parse_payload(protocol.ToolFindingsParams, {"tool": "doctor", "findings": 3})
    assert isinstance(not_a_list, protocol.ProtocolError) and "'findings'" in str(not_a_list)


def test_the_handshake_lines_are_the_contracts_dataclasses():
    welcome = protocol.hub_answer(protocol.Welcome(sessionId="s1"))
    rejected = protocol.hub_answer(protocol.Rejected(reason="bad token"))
    assert welcome == {"type": "welcome", "sessionId": "s1"} and set(welcome) - {"type"} == set(protocol.WELCOME_KEYS)
    assert rejected == {"type": "rejected", "reason": "bad token"}
    assert protocol.parse_hub_answer(welcome) == protocol.Welcome(sessionId="s1")
    assert protocol.parse_hub_answer(rejected) == protocol.Rejected(reason="bad token")
    for other in ({}, {"type": "hello"}, {"type": "welcome"}, {"type": "rejected", "reason": 3}):
        assert isinstance(protocol.parse_hub_answer(other), protocol.ProtocolError), other
    credentials = protocol.parse_payload(protocol.HelloCredentials, {"type": "hello", "token": "t", "pid": "forged"})
    assert credentials == protocol.HelloCredentials(token="t")  # admitted on the token alone; the event is read apart
    assert isinstance(protocol.parse_payload(protocol.HelloCredentials, {"token": 7}), protocol.ProtocolError)
    assert protocol.HELLO_KEYS[0] == "token" and "protocol" in protocol.HELLO_KEYS and "rank" not in protocol.HELLO_KEYS
