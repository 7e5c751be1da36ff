"""A NaN/Inf birth as the user reads it (agent/sentinel/records.py): the headline, the counts, the record made at a
frame, its event and finding, and the report that publishes only the first birth."""

import os
import sys

import torch

from tensorsight.agent.runtime import identity
from tensorsight.agent.sentinel.records import counts_text, make_record, publish_found_later, report, title_of
from tensorsight.agent.sentinel.state import sw
from tensorsight.core import protocol
from tensorsight.core.nonfinite import NonFiniteCounts

HERE = os.path.abspath(__file__)


def test_the_title_says_nan_or_inf_and_born_or_came_in():
    assert title_of(NonFiniteCounts(nan=1, posinf=2), born=True) == "NaN born here"
    assert title_of(NonFiniteCounts(posinf=2), born=True) == "Inf born here"
    assert title_of(NonFiniteCounts(neginf=1), born=False) == "Inf came in here"


def test_counts_text_names_each_kind_present():
    assert counts_text(NonFiniteCounts(2, 1, 3)) == "2 NaN, 1 +Inf, 3 -Inf"
    assert counts_text(NonFiniteCounts(neginf=4)) == "4 -Inf"
    assert counts_text(NonFiniteCounts()) == "no NaN/Inf"


def make_here(**where):
    frame = sys._getframe()
    counts = NonFiniteCounts(nan=1)
    return make_record("forward", "torch.log", counts, frame, what="log made 1 NaN", title="NaN born here", **where)


def test_a_record_made_at_a_frame_names_its_file_line_phase_and_step():
    output = torch.full((2, 3), float("nan"))
    record = make_here(output=output, step=7, module="net (Net)")
    assert record.file == HERE and record.line == make_here.__code__.co_firstlineno + 3
    assert record.message == f"log made 1 NaN — forward, at test_records.py:{record.line}"  # the step is a field
    assert (record.step, record.elements, record.nan, record.rank) == (7, 6, 1, identity.rank())
    assert record.details == {} and repr(record).startswith("<NaN born here: log made 1 NaN")
    event = protocol.to_wire(record.event())
    assert event["module"] == "net (Net)" and "node" not in event and event["op"] == "torch.log"
    finding = record.finding()
    assert finding is not None and finding.file == HERE and finding.line == record.line
    assert finding.details["module"] == "net (Net)" and finding.details["elements"] == 6


def test_a_given_location_wins_and_a_replayed_record_says_so():
    record = make_here(file="elsewhere.py", line=3, replayed=True)
    assert record.file == os.path.abspath("elsewhere.py") and record.line == 3
    assert record.message.endswith("at elsewhere.py:3") and record.details == {"replayed": True}
    assert record.finding().details["replayed"] is True


def test_a_record_without_location_has_no_finding():
    record = make_record("backward", "(backward)", NonFiniteCounts(nan=1), None, what="w", title="t")
    assert record.file is None and record.finding() is None
    assert "unknown location" in record.message


def test_only_the_first_birth_is_reported(fresh_sentinel, capsys):
    first, second = make_here(), make_here()
    report(first, None)
    report(second, None)
    assert sw.last is first and sw.first_reported
    kinds = [event["type"] for event in fresh_sentinel]
    assert kinds == ["nonfinite", "finding"]
    assert fresh_sentinel[0]["message"] == first.message
    assert fresh_sentinel[1]["finding"]["kind"] == "nonfinite"
    assert capsys.readouterr().err.count("[tensorsight] NaN born here: ") == 1


def test_a_birth_found_later_says_when_and_where_it_stopped(fresh_sentinel):
    record = make_here(file="train.py", line=12)
    line = sys._getframe().f_lineno + 1
    publish_found_later(record, None, "backward() returned")
    assert record.stopped_at == f"test_records.py:{line}"
    assert record.message.endswith(f"(found when backward() returned, at test_records.py:{line})")
    assert sw.last is record


def test_the_record_alone_lists_its_facts_and_gives_step_and_rank_as_fields_of_its_finding():
    """agent/sentinel/record.py: plain data that the sentinel's state can hold without importing who builds it."""
    from tensorsight.agent.sentinel.record import NonFiniteRecord

    record = NonFiniteRecord(
        phase="loss",
        op="torch.log",
        title="Inf born here",
        message="log made 2 -Inf — loss, step 4, at train.py:9",
        summary="log made 2 -Inf — loss",
        file="/work/train.py",
        line=9,
        step=4,
        rank=1,
        nan=0,
        posinf=0,
        neginf=2,
        elements=8,
        module="head (Linear)",
    )
    finding = record.finding()
    assert finding is not None
    assert finding.message == "Inf born here: log made 2 -Inf — loss"
    assert (finding.line, finding.step, finding.rank) == (9, 4, 1)
    assert finding.details["module"] == "head (Linear)" and finding.details["neginf"] == 2
    rows = dict(record.__tensorsight_rows__())
    assert rows["step"] == 4 and rows["neginf"] == 2 and "stopped_at" not in rows
    assert protocol.to_wire(record.event())["rank"] == 1 and "node" not in protocol.to_wire(record.event())
    assert NonFiniteRecord(**{**record.__dict__, "file": None}).finding() is None
