"""The hub's wire codec (core/json_lines.py): what the agent encodes the server decodes unchanged, odd values are sent
as text instead of raising, bad lines get a reason instead of an exception, and it is the only codec either end of
the hub uses (no second encoder creeps back into hub_client.py or server/hub.py)."""

from __future__ import annotations

import ast
import math
import pathlib

import pytest

from tensorsight.core import json_lines, protocol

PYHELPERS = pathlib.Path(json_lines.__file__).resolve().parents[1]
HUB_ENDS = (PYHELPERS / "agent" / "runtime" / "hub_client.py", PYHELPERS / "server" / "hub.py")


def test_an_event_round_trips_one_line_including_non_finite_numbers_and_non_ascii_text():
    event = {"type": "scalars", "pid": 7, "values": {"train/loss": float("nan"), "lr": float("inf")}, "name": "pérdida"}
    line = json_lines.encode(event)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    decoded, problem = json_lines.decode(line)
    assert problem is None and decoded is not None
    assert math.isnan(decoded["values"]["train/loss"]) and decoded["values"]["lr"] == float("inf")
    assert decoded["name"] == "pérdida" and decoded["pid"] == 7


def test_values_json_cannot_carry_are_sent_as_their_item_a_short_list_or_their_text():
    class Odd:
        def __str__(self) -> str:
            return "odd-value"

    class Scalar:
        def item(self) -> float:
            return 2.5

    class Pair:
        size = 2

        def tolist(self) -> list[int]:
            return [1, 2]

    decoded, _ = json_lines.decode(json_lines.encode({"type": "log", "odd": Odd(), "scalar": Scalar(), "pair": Pair()}))
    assert decoded == {"type": "log", "odd": "odd-value", "scalar": 2.5, "pair": [1, 2]}
    lone_surrogate, _ = json_lines.decode(json_lines.encode({"type": "log", "text": "a\ud800b"}))
    assert lone_surrogate is not None and lone_surrogate["text"].startswith("a")


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"\xff\xfe", "not UTF-8"),
        (b"{not json", "not JSON"),
        (b"[1, 2]", "a JSON list, not an object"),
        (b'{"pid": 1}', "no 'type'"),
        (b'{"type": ""}', "no 'type'"),
        (b'{"type": "' + b"x" * (protocol.MAX_TYPE_LENGTH + 1) + b'"}', "no 'type'"),
        (b"[" * 100_000 + b"]" * 100_000, "JSON nested too deeply"),
    ],
)
def test_a_bad_line_gets_a_reason_never_an_exception(line, reason):
    message, problem = json_lines.decode(line)
    assert message is None and problem is not None and problem.startswith(reason)


@pytest.mark.parametrize("module", HUB_ENDS, ids=lambda path: path.name)
def test_each_end_of_the_hub_codes_lines_only_through_json_lines(module):
    tree = ast.parse(module.read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    from_core = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "tensorsight.core"
        for alias in node.names
    }
    assert "json" not in imported, f"{module.name} imports json: encode and decode with tensorsight.core.json_lines"
    assert "json_lines" in from_core
