"""A finding's step and rank are fields, said once by whoever shows it, never words of its message.

The builders that know a step (the curve diagnosis, the rank comparison, the sentinel's record of a NaN's birth) leave
it out of their words; the server's diagnostic and the doctor's report line add `` (step N, rank R)`` in the display
language (``core.findings.finding_context``). The realistic suite checks the same on the doctor's real findings
(tests/cli/test_realistic_suite.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from support.finding_words import repeated_fields
from tensorsight.core import l10n
from tensorsight.core.curves import TrainingCurves, diagnose_curves
from tensorsight.core.findings import Finding, finding_context, format_finding
from tensorsight.core.ranks import diverging_rank

LOSS_AT = ("/project/train.py", 40)


@pytest.fixture()
def spanish() -> Iterator[None]:
    l10n.set_language("es")
    yield
    l10n.set_language(None)


def curves(train: list[float], grad: list[float] | None = None, **extra) -> TrainingCurves:
    steps = list(range(1, len(train) + 1))
    grad = grad if grad is not None else [1.0] * len(train)
    return TrainingCurves(
        train_loss=train,
        train_steps=steps,
        grad_norm=grad,
        grad_steps=steps[: len(grad)],
        lr=0.1,
        loss_at=LOSS_AT,
        optimizer_at=("/project/train.py", 20),
        validation_at=("/project/train.py", 50),
        model_at=("/project/train.py", 38),
        **extra,
    )


def origin(op: str, phase: str) -> dict:
    details = {"op": op, "phase": phase}
    return {"kind": "nonfinite", "file": "/project/train.py", "line": 25, "message": "NaN", "details": details}


def built_findings() -> list[Finding]:
    """One finding of each builder that knows a step, on the series a real run hands it."""
    growing = [1.0] * 10 + [1.5**k for k in range(1, 8)] + [math.nan] * 13
    flat_then_nan = [1.0] * 17 + [math.nan] * 13
    found: list[Finding] = []
    for where in (origin("torch.as_tensor", "data"), origin("torch.log", "forward"), None):
        found += diagnose_curves(curves(flat_then_nan, first_nonfinite_loss_step=18, nonfinite_origin=where))
    found += diagnose_curves(curves(growing, first_nonfinite_loss_step=18))  # the learning rate is blamed
    healthy = [2.3 * math.exp(-i / 30) + 0.2 for i in range(100)]
    found += diagnose_curves(curves(healthy, grad=[1.0 * 1.08**i for i in range(100)]))  # peak norm at step 100
    found += diagnose_curves(curves(healthy, first_nonfinite_grad_step=7))
    level = {s: 0.5 * (1 + 0.1 * math.sin(s)) for s in range(1, 13)}
    nan_on_one = {0: dict(level), 1: {**level, 3: math.nan}}
    drifting = {0: dict(level), 1: {s: (5.0 + s if s >= 8 else v) for s, v in level.items()}}
    for series in (nan_on_one, drifting):
        finding = diverging_rank(series, "loss", file="/w/train.py", line=42)
        assert finding is not None
        found.append(finding)
    return found


def test_every_builder_that_knows_the_step_leaves_it_and_the_rank_out_of_its_words():
    found = built_findings()
    assert len(found) == 8 and all(f.step is not None for f in found)
    assert sum(f.rank is not None for f in found) == 2
    assert [(f.message, repeated_fields(f.to_dict())) for f in found if repeated_fields(f.to_dict())] == []


def test_in_spanish_too(spanish):
    found = built_findings()
    assert all("NaN" in f.message or "rank" in f.message or "gradiente" in f.message for f in found)
    assert [f.message for f in found if repeated_fields(f.to_dict())] == []


def test_the_sentinels_record_keeps_step_and_rank_as_fields():
    from tensorsight.agent.sentinel.records import make_record
    from tensorsight.core.nonfinite import NonFiniteCounts

    record = make_record(
        "forward",
        "torch.log",
        NonFiniteCounts(nan=0, posinf=0, neginf=4),
        None,
        what="torch.log made 4 -inf from finite inputs",
        title="-Inf born",
        file="/project/train.py",
        line=25,
        step=12,
    )
    assert record.step == 12 and record.message == "torch.log made 4 -inf from finite inputs — forward, at train.py:25"
    finding = record.finding()
    assert finding is not None and finding.step == 12 and repeated_fields(finding.to_dict()) == []
    assert record.event().step == 12 and "12" not in (record.event().message or "")


def test_the_step_and_rank_are_said_once_where_the_finding_is_shown():
    finding = Finding("dynamics", "error", "loss became NaN on this rank", "/w/train.py", 42, step=12, rank=1)
    assert finding_context(12, 1) == " (step 12, rank 1)" and finding_context(None, None) == ""
    assert format_finding(finding).endswith("loss became NaN on this rank (step 12, rank 1)")
    pytest.importorskip("lsprotocol")
    from tensorsight.server.diagnostics import to_diagnostic

    # a producer that said "step 12" itself would now show it twice: nothing is hidden by a substring test
    said = Finding("dynamics", "warning", "NaN at step 12", "/w/train.py", 1, step=12)
    assert to_diagnostic(said, ["x\n"], "TensorSight (run)").message == "NaN at step 12 (step 12)"
    assert to_diagnostic(finding, ["x\n"], "TensorSight (run)").message.count("12") == 1


def test_the_context_is_in_the_display_language(spanish):
    assert l10n.current_language() == "es"
    assert finding_context(3, 0) == " (paso 3, rank 0)"
    assert finding_context(None, 2) == " (rank 2)"
