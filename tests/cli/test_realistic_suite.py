"""The doctor over the realistic suite (tests/programs/realistic/, scored by tests/support/realistic.py).

One case per script: every ``# BUG:`` marker found with one of its kinds at its exact file and line, and no warning
or error anywhere else (on a clean script: none at all). What today's detectors miss is listed in KNOWN_GAPS and runs
as ``xfail(strict=True)``: when a detector lands, its case XPASSes and fails until the entry is removed. Every script
must also run to its end under the doctor, and every clean script must really learn (its last printed loss below its
first), so that silence on it means something.

The harness itself (markers, scoring, loss parsing) is checked first on small inputs.
"""

from __future__ import annotations

import pytest

from support import realistic
from support.finding_words import repeated_fields

# Each case runs the doctor (and through it the script) in a child process, via support.realistic. The first case
# that needs the doctor's runs waits for all of them (about 36 scripts, two at a time, each bounded by the harness's
# own timeout), hence a module budget above pytest's default per-test timeout.
pytestmark = [pytest.mark.subprocess, pytest.mark.timeout(1800)]

SCRIPTS = realistic.discover()
BY_NAME = {script.name: script for script in SCRIPTS}

# What the doctor misses or says wrongly today, per script: each entry is a strict xfail, to be removed when the
# detector that finds it lands (the case then XPASSes and fails until it is).
KNOWN_GAPS: dict[str, str] = {}

# Scripts whose bug makes the program raise (the doctor explains the error and lets it propagate): they must stop with
# this text in their error instead of running to their end.
EXPECTED_TO_RAISE: dict[str, str] = {
    "gan_two_optimizers/bug_undetached_fake.py": "backward through the graph a second time",
    "word_lm/bug_hidden_not_detached.py": "backward through the graph a second time",
}


def _cases(scripts: list[realistic.Script], gaps: dict[str, str] | None = None) -> list:
    cases = []
    for script in scripts:
        marks = []
        if gaps is not None and script.name in gaps:
            marks.append(pytest.mark.xfail(strict=True, reason=gaps[script.name]))
        cases.append(pytest.param(script.name, id=script.name, marks=marks))
    return cases


@pytest.fixture(scope="module")
def doctor_runs(request: pytest.FixtureRequest) -> dict[str, realistic.Run]:
    """The doctor over the scripts the selected cases of this module need, two at a time, once per module."""
    wanted = []
    for item in request.session.items:
        if not isinstance(item, pytest.Function) or item.module is not request.module:
            continue
        name = item.callspec.params.get("name") if hasattr(item, "callspec") else None
        if name in BY_NAME and BY_NAME[name] not in wanted:
            wanted.append(BY_NAME[name])
    return realistic.run_all(wanted)


# ---- the harness ---------------------------------------------------------------------------------------------------


def test_markers_are_read_from_comments_with_alternative_kinds(tmp_path):
    source = tmp_path / "bug_x.py"
    source.write_text(
        'note = "# BUG: shape is only text here"\n'
        "total_loss += loss  # BUG: memory|training-logic (keeps the graph)\n"
        "x = 1\n"
        "model(x)  # BUG: training-logic\n"
    )
    markers = realistic.parse_markers(str(source))
    assert [(m.line, sorted(m.kinds), m.note) for m in markers] == [
        (2, ["memory", "training-logic"], "(keeps the graph)"),
        (4, ["training-logic"], ""),
    ]


def test_a_marker_after_a_closing_bracket_stands_for_the_whole_statement(tmp_path):
    source = tmp_path / "bug_x.py"
    source.write_text(
        "loader = DataLoader(\n"
        "    train_set, batch_size=32\n"
        ")  # BUG: training-logic no shuffle\n"
        "for x in loader:  # BUG: training-logic\n"
        "    pass\n"
    )
    path = str(source)
    block, header = realistic.parse_markers(path)
    assert (block.first, block.line, header.first, header.line) == (1, 3, None, 4)
    script = realistic.Script("family", path, (block, header))

    def scored(line: int) -> realistic.Score:
        found = {"kind": "training-logic", "severity": "warning", "message": "m", "file": path, "line": line}
        return realistic.score(realistic.Run(script, 0, 1.0, "", document={"findings": [found]}))

    assert scored(1).found == [block] and scored(2).found == [block] and scored(3).found == [block]
    assert scored(4).found == [header] and scored(5).found == []


def test_a_marker_with_an_unknown_kind_is_refused(tmp_path):
    source = tmp_path / "bug_x.py"
    source.write_text("loss.backward()  # BUG: gradients\n")
    with pytest.raises(ValueError, match="unknown finding kind"):
        realistic.parse_markers(str(source))


def test_scoring_wants_the_exact_line_and_an_accepted_kind(tmp_path):
    path = str(tmp_path / "bug_x.py")
    marker = realistic.Marker(path, 10, frozenset({"memory", "training-logic"}))
    script = realistic.Script("family", path, (marker,))

    def finding(line: int, kind: str, severity: str = "warning", file: str = path) -> dict:
        return {"kind": kind, "severity": severity, "message": "m", "file": file, "line": line}

    def scored(*findings: dict) -> realistic.Score:
        return realistic.score(realistic.Run(script, 0, 1.0, "", document={"findings": list(findings)}))

    assert scored(finding(10, "memory")).perfect
    off_by_one = scored(finding(11, "memory"))
    assert off_by_one.missed == [marker] and len(off_by_one.false_alarms) == 1
    wrong_kind = scored(finding(10, "dynamics"))
    assert wrong_kind.missed == [marker] and wrong_kind.false_alarms[0]["kind"] == "dynamics"
    other_file = scored(finding(10, "memory", file=str(tmp_path / "engine.py")))
    assert other_file.missed == [marker]
    info_only = scored(finding(10, "memory", severity="info"), finding(3, "performance", severity="info"))
    assert info_only.missed == [marker] and info_only.false_alarms == []
    both_kinds = scored(finding(10, "memory"), finding(10, "training-logic", severity="error"))
    assert both_kinds.perfect
    no_report = realistic.score(realistic.Run(script, -1, 120.0, "", problem="timed out after 120 s"))
    assert no_report.missed == [marker] and "timed out" in no_report.error


def test_losses_are_read_from_the_scripts_prints():
    output = (
        "Train Epoch: 1 [0/1024]\tLoss: 2.317183\n"
        "[1/4][0/16] Loss_D: 1.3922 Loss_G: 0.6897\n"
        "| epoch 1 | batch 5 | lr 20.00 | loss 4.313 | ppl 74.69\n"
        "Test set results: loss= 0.1413 accuracy= 0.9667\n"
        "epoch 3: train loss: nan\n"
    )
    losses = realistic.losses_printed(output)
    assert losses[:3] == [2.317183, 4.313, 0.1413] and len(losses) == 4 and losses[3] != losses[3]


def test_a_bug_in_a_helper_module_belongs_to_the_script_that_imports_it():
    script = BY_NAME["tabular/bug_trainer_no_zero_grad.py"]
    assert [m.file.rsplit("/", 1)[-1] for m in script.markers] == ["trainer_without_zero_grad.py"]
    assert BY_NAME["tabular/clean.py"].markers == ()


def test_the_suite_has_ten_families_each_with_a_clean_script_and_bugs():
    families: dict[str, list[realistic.Script]] = {}
    for script in SCRIPTS:
        families.setdefault(script.family, []).append(script)
    assert len(families) >= 10
    for family, scripts in families.items():
        assert scripts[0].clean, f"{family} has no clean.py"
        assert len(scripts) >= 2, f"{family} has no bug variant"


def test_every_known_gap_names_a_script_of_the_suite():
    assert sorted(set(KNOWN_GAPS) - set(BY_NAME)) == []
    assert sorted(set(EXPECTED_TO_RAISE) - set(BY_NAME)) == []


# ---- the doctor on each script -------------------------------------------------------------------------------------


def _explain(result: realistic.Score, run: realistic.Run) -> str:
    lines = [f"missed {m.where()}" for m in result.missed]
    lines += [f"false alarm {realistic.describe_finding(f)}" for f in result.false_alarms]
    found = [realistic.describe_finding(f) for f in (run.document or {}).get("findings", [])]
    return "\n".join([*lines, "all findings:", *found])


@pytest.mark.parametrize("name", _cases(SCRIPTS, KNOWN_GAPS))
def test_the_doctor_finds_the_bug_at_its_line_and_nothing_else(name, doctor_runs):
    run = doctor_runs[name]
    result = realistic.score(run)
    assert run.document is not None, run.problem
    assert (result.missed, result.false_alarms) == ([], []), _explain(result, run)


@pytest.mark.parametrize("name", _cases(SCRIPTS))
def test_the_script_runs_to_its_end_under_the_doctor(name, doctor_runs):
    run = doctor_runs[name]
    assert run.document is not None, run.problem
    if name in EXPECTED_TO_RAISE:
        assert EXPECTED_TO_RAISE[name] in str(run.document.get("error", "")), run.output[-3000:]
    else:
        assert "error" not in run.document and "partial" not in run.document, run.output[-3000:]
    assert run.returncode in (0, 1)


@pytest.mark.parametrize("name", _cases(SCRIPTS))
def test_no_finding_says_its_own_step_or_rank_in_words(name, doctor_runs):
    """The step and rank are fields (the doctor's report line and the server's diagnostic add them once)."""
    run = doctor_runs[name]
    assert run.document is not None, run.problem
    findings = run.document.get("findings", [])
    repeated = [(f["message"], repeated_fields(f)) for f in findings if repeated_fields(f)]
    assert repeated == []


@pytest.mark.parametrize("name", _cases([s for s in SCRIPTS if s.clean]))
def test_the_clean_script_learns(name, doctor_runs):
    losses = realistic.losses_printed(doctor_runs[name].output)
    assert len(losses) >= 2, doctor_runs[name].output[-2000:]
    assert all(value == value for value in losses), losses  # no NaN
    assert losses[-1] < losses[0], losses
