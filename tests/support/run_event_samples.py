"""One run event of each type the editor receives, built from the contract's dataclasses as the agent (and, for its
own events, the server) builds them; written as the editor receives them to ``tests/fixtures/run_events.json``.

``tests/core/test_protocol.py`` checks that every type has a sample, that each survives the hub's codec and the
server's ``parse_event`` unchanged, and that the fixture is current; ``tests/extension/protocol.test.ts`` feeds the
fixture to the generated ``parseRunEvent`` and the training panel's reduction: the TypeScript reader accepts what
Python emits. Rewrite the fixture after changing the contract: ``.venv/bin/python tests/support/run_event_samples.py``.
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

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "run_events.json")
FILE = "/project/train.py"
COMMON: dict[str, Any] = {"pid": 4242, "time": 1_700_000_000.25}

SAMPLES: tuple[protocol.AgentEvent, ...] = (
    protocol.HelloEvent(protocol=protocol.HUB_PROTOCOL, script=FILE, argv=[FILE], origin="debugger", **COMMON),
    protocol.ByeEvent(dropped=0, **COMMON),
    protocol.DroppedEvent(count=3, **COMMON),
    protocol.DroppedEvent(count=2, origin="server", oversize=1, maxEventBytes=protocol.MAX_FORWARDED_EVENT_BYTES),
    protocol.FindingEvent(
        finding={"kind": "dynamics", "severity": "warning", "message": "loss diverged", "file": FILE, "line": 5},
        **COMMON,
    ),
    protocol.NonfiniteEvent(
        file=FILE,
        line=12,
        op="div",
        phase="forward",
        step=4,
        nan=0,
        posinf=1,
        neginf=0,
        message="Inf born here: div made 1 +Inf",
        title="Inf born here",
        module="fc",
        **COMMON,
    ),
    protocol.ShapeMapEvent(model="Net", rows=[{"path": "fc", "type": "Linear", "depth": 1}], file=FILE, line=3),
    protocol.ConditionErrorEvent(expression="tensorsight.spike(loss, 'x')", message="bad window", location="t.py:9"),
    protocol.RankEvent(rank=1, local_rank=1, world_size=2, host="node", source="env", origin="debugger", **COMMON),
    protocol.RankStateEvent(
        rank=1, local_rank=1, world_size=2, state="waiting", since=1.5, heartbeat=5.0, step=3, blocked_in="all_reduce"
    ),
    protocol.ScalarsEvent(step=2, split="train", values={"loss": float("nan"), "lr": 0.1, "grad_norm": 4.0}, **COMMON),
    protocol.ScalarsEvent(step=2, split="val", values={"loss": 0.75}, batches=8, **COMMON),
    protocol.PhasesEvent(
        step=1,
        seconds={"data": 0.01, "forward": 0.02, "backward": 0.06, "optimizer": 0.01, "other": 0.0},
        file=FILE,
        line=20,
    ),
    protocol.PhaseSummaryEvent(steps=4, seconds={"data": 0.2, "forward": 0.1, "backward": 0.1, "other": 0.0}),
    protocol.HistogramEvent(
        step=100,
        name="fc.weight",
        kind="grad",
        edges=[0.0, 0.5, 1.0],
        counts=[3, 4],
        nonfinite=protocol.NonfiniteCounts(nan=1, posinf=0, neginf=0),
    ),
    protocol.MemoryEvent(step=2, cpu_rss_bytes=1 << 20, cuda_allocated=1 << 22),
    protocol.LogEvent(level="WARNING", message="loss spiked at step 2"),
    protocol.TensorboardEvent(logdir="/tmp/tb", command="tensorboard --logdir /tmp/tb"),
    protocol.TimerEvent(name="data", seconds=0.0125, file=FILE, line=7, **COMMON),
    protocol.RunFinishedEvent(error=""),
    protocol.RanksEvent(verdicts=[{"rank": 1, "verdict": "waiting", "message": "in all_reduce"}], time=1.0),
)

# types the server shows itself and never forwards (checked on the Python side only)
NOT_FORWARDED: tuple[protocol.AgentEvent, ...] = (
    protocol.ShapeEvent(
        file=FILE,
        line=3,
        text="f32[8, 4], i64[8]",
        shape=[8, 4],
        dtype="float32",
        device="cpu",
        step=1,
        name="xb, yb",
        values=[
            protocol.ShapeValue(name="xb", text="f32[8, 4]", shape=[8, 4], dtype="float32", device="cpu"),
            protocol.ShapeValue(name="yb", text="i64[8]", shape=[8], dtype="int64", device="cpu"),
        ],
        **COMMON,
    ),
)


def as_received() -> list[dict[str, Any]]:
    """The samples as the editor receives them (``tensorsight/runEvent`` carries ``json_safe`` copies)."""
    return [protocol.json_safe(protocol.wire_event(sample)) for sample in SAMPLES]


def render() -> str:
    return json.dumps(as_received(), indent=2) + "\n"


if __name__ == "__main__":
    with open(FIXTURE, "w", encoding="utf-8") as out:
        out.write(render())
