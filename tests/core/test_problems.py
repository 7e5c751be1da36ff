"""core.problems: one problem per bug across the rule, the doctor and a debug run."""

from dataclasses import replace

from tensorsight.core.findings import Finding
from tensorsight.core.problems import fold_symptoms, one_per_bug, sourced
from tensorsight.core.rules import analyze

SCRIPT = "/project/train.py"
SOURCE = """import torch
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
total_loss = 0
for step in range(3):
    optimizer.zero_grad()
    loss = model(torch.ones(1, 2)).sum()
    loss.backward()
    optimizer.step()
    total_loss += loss
"""
OBSERVED = (
    "`total_loss` keeps the autograd graph of every step alive (3 steps so far, since step 3): "
    "`total_loss += loss`; accumulate `loss.item()` instead"
)


def memory(message: str = OBSERVED, line: int = 10, step: int = 3) -> Finding:
    return Finding("memory", "warning", message, SCRIPT, line, step, None, {"variable": "total_loss"})


def test_the_rule_the_doctor_and_the_run_report_one_bug_once():
    (rule,) = analyze(SOURCE, SCRIPT)
    assert rule.details["code"] == "TS104" and rule.line == 10
    doctor = [rule, memory()]  # the doctor runs the rules and observes the run
    run = [memory(OBSERVED.replace("3 steps", "5 steps"), step=5)]
    (problem,) = one_per_bug(sourced("rule", [rule]) + sourced("doctor", doctor) + sourced("run", run))
    assert problem.sources == ("rule", "doctor", "run")
    assert problem.finding.message == OBSERVED.replace("3 steps", "5 steps")  # what was observed, most detail
    assert problem.finding.details["code"] == "TS104" and "fix" in problem.finding.details  # the quick fix stays
    assert problem.finding.details["variable"] == "total_loss" and problem.finding.step == 3


def test_different_bugs_lines_and_ranks_stay_apart():
    (rule,) = analyze(SOURCE, SCRIPT)
    other_line = memory(line=7)
    other_kind = Finding("nonfinite", "error", "NaN here", SCRIPT, 10, 4)
    other_rank = Finding("memory", "warning", OBSERVED, SCRIPT, 10, 3, rank=1)
    problems = one_per_bug(sourced("rule", [rule]) + sourced("run", [other_line, other_kind, other_rank, memory()]))
    assert [(p.finding.line, p.finding.kind, p.finding.rank, p.sources) for p in problems] == [
        (10, "memory", None, ("rule", "run")),
        (7, "memory", None, ("run",)),
        (10, "nonfinite", None, ("run",)),
        (10, "memory", 1, ("run",)),
    ]
    assert problems[0].finding.severity == "warning"


def test_a_lone_finding_is_passed_through_and_severity_is_the_highest():
    lone = memory()
    assert one_per_bug(sourced("run", [lone]))[0].finding is lone
    louder = Finding("memory", "error", "short", SCRIPT, 10, 9)
    (problem,) = one_per_bug(sourced("doctor", [louder]) + sourced("run", [lone]))
    assert problem.finding.severity == "error" and problem.finding.message == OBSERVED


def test_two_runtime_findings_of_one_kind_at_one_line_stay_two_bugs_when_they_measure_different_things():
    def dynamics(metric: str, severity: str, source_step: int) -> Finding:
        details = {"metric": metric, "code": "rank-divergence"}
        return Finding("dynamics", severity, f"rank 1's {metric} diverges", SCRIPT, 21, source_step, 1, details)

    run = [dynamics("loss", "warning", 9), dynamics("grad_norm", "error", 12)]
    doctor = [dynamics("loss", "warning", 9)]
    problems = one_per_bug(sourced("run", run) + sourced("doctor", doctor))
    assert sorted(p.finding.details["metric"] for p in problems) == ["grad_norm", "loss"]
    (loss,) = [p for p in problems if p.finding.details["metric"] == "loss"]
    assert loss.sources == ("doctor", "run")


NO_ZERO_GRAD = """import torch
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.ones(1, 2)).sum()
    loss.backward()
    optimizer.step()
"""


def test_the_never_cleared_rule_and_the_check_that_sees_it_are_one_bug_and_another_check_stays_apart():
    (rule,) = [f for f in analyze(NO_ZERO_GRAD, SCRIPT) if f.details["code"] == "TS101"]
    seen = Finding("training-logic", "warning", "never cleared since its previous step", SCRIPT, rule.line, 2)
    seen = replace(seen, details={"check": "gradients-never-cleared", "steps": 2})
    other = Finding(
        "training-logic", "warning", "no gradient reached", SCRIPT, rule.line, 3, None, {"check": "no-gradient"}
    )
    problems = one_per_bug(sourced("rule", [rule]) + sourced("doctor", [seen, other]))
    assert [(p.sources, p.finding.details.get("check")) for p in problems] == [
        (("rule", "doctor"), "gradients-never-cleared"),
        (("doctor",), "no-gradient"),
    ]
    assert problems[0].finding.details["code"] == "TS101" and problems[0].finding.message == seen.message


EVAL_IN_HELPER = """import torch
model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.5))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def evaluate(net):
    net.eval()
    with torch.no_grad():
        return net(torch.ones(4, 2)).sum().item()


for epoch in range(3):
    optimizer.zero_grad()
    model(torch.ones(4, 2)).sum().backward()
    optimizer.step()
    print(evaluate(model))
"""


def test_an_evaluation_helper_left_in_eval_is_one_problem_where_the_run_sees_it():
    """TS103 reports the helper's call in the loop; the run sees the bug at the helper's ``eval()``: one problem,
    shown where it was observed, with the rule's code but not its range (another line)."""
    (rule,) = [f for f in analyze(EVAL_IN_HELPER, SCRIPT) if f.details["code"] == "TS103"]
    assert rule.line == 16 and rule.details["observed_at"] == {"file": SCRIPT, "line": 7}
    seen = Finding(
        "training-logic", "warning", "Sequential was switched to evaluation mode here and never back", SCRIPT, 7, 2
    )
    seen = replace(seen, details={"check": "backward-in-eval-mode", "model": "Sequential"})
    elsewhere = replace(seen, line=9)  # the same check at another line: another problem
    (problem, other) = one_per_bug(sourced("rule", [rule]) + sourced("doctor", [seen, elsewhere]))
    assert problem.sources == ("rule", "doctor") and other.sources == ("doctor",)
    assert (problem.finding.line, problem.finding.message) == (7, seen.message)
    assert problem.finding.details["code"] == "TS103" and problem.finding.details["check"] == "backward-in-eval-mode"
    assert "range" not in problem.finding.details and "observed_at" not in problem.finding.details
    (alone,) = one_per_bug(sourced("rule", [rule]))  # without a run: the rule as it is, at the call
    assert alone.finding is rule


HIDDEN_CARRIED = """import torch
rnn = torch.nn.GRU(4, 8)
optimizer = torch.optim.SGD(rnn.parameters(), lr=0.1)
hidden = torch.zeros(1, 2, 8)
for chunk in torch.randn(5, 3, 2, 4):
    optimizer.zero_grad()
    output, hidden = rnn(chunk, hidden)
    loss = output.pow(2).mean()
    loss.backward()
    optimizer.step()
"""


def test_a_carried_state_and_the_error_it_raises_at_the_backward_are_one_problem_at_the_line_to_fix():
    """TS107 reports the call that feeds the state back; the run explains the error raised at the backward() two
    lines down: one problem, shown at the rule's line with its fix, naming the line that raised, as an error."""
    (rule,) = [f for f in analyze(HIDDEN_CARRIED, SCRIPT) if f.details["code"] == "TS107"]
    assert rule.line == 7 and rule.details["raised_at"] == {"file": SCRIPT, "line": 9}
    raised = Finding("training-logic", "error", "backward() walks a freed graph", SCRIPT, 9, None, None)
    raised = replace(raised, details={"check": "graph-reused", "tensor": None})
    elsewhere = replace(raised, line=8)  # an error raised at another line: another problem
    problem, other = one_per_bug(sourced("rule", [rule]) + sourced("doctor", [raised, elsewhere]))
    assert problem.sources == ("rule", "doctor") and other.sources == ("doctor",)
    assert (problem.finding.line, problem.finding.severity) == (7, "error")
    assert problem.finding.message == rule.message + ". A run raised that error at line 9"
    assert problem.finding.details["code"] == "TS107" and "fix" in problem.finding.details
    # merged again with the run's report (the editor merges the doctor's problems with a debug run's): said once
    (again,) = one_per_bug(sourced("doctor", [problem.finding]) + sourced("run", [raised]))
    assert again.finding.message == problem.finding.message
    (alone,) = one_per_bug(sourced("rule", [rule]))
    assert alone.finding is rule


def flat(diagnosis: str = "not-decreasing", line: int = 30) -> Finding:
    return Finding(
        "dynamics", "warning", f"training loss is {diagnosis}", SCRIPT, line, None, None, {"diagnosis": diagnosis}
    )


def labels_permuted() -> Finding:
    return Finding(
        "training-logic",
        "warning",
        "labels reordered apart",
        SCRIPT,
        12,
        None,
        None,
        {"check": "separate-permutations"},
    )


def test_a_flat_loss_folds_into_the_finding_that_names_its_cause():
    permuted = labels_permuted()
    folded = fold_symptoms([permuted, flat()])
    assert [f.details.get("check") for f in folded] == ["separate-permutations"]
    assert folded[0].details["symptom"] == {"diagnosis": "not-decreasing", "message": "training loss is not-decreasing"}
    for cause in (
        Finding(
            "shape",
            "warning",
            "silent broadcasting in mse_loss",
            SCRIPT,
            51,
            0,
            None,
            {"op": "mse_loss", "result": [128, 128]},
        ),
        Finding("training-logic", "warning", "softmax into cross_entropy", SCRIPT, 26, None, None, {"code": "TS105"}),
        Finding(
            "training-logic",
            "warning",
            "embedding in no optimizer",
            SCRIPT,
            9,
            None,
            None,
            {"check": "parameters-in-no-optimizer"},
        ),
    ):
        symptom = {"diagnosis": "at-chance", "message": "training loss is at-chance"}
        assert fold_symptoms([flat("at-chance"), cause]) == [
            replace(cause, details={**cause.details, "symptom": symptom})
        ]
    # a cause in another file of the run: the verdict of this file is dropped, nothing to annotate here
    assert fold_symptoms([flat()], causes=[permuted]) == []


def test_a_flat_loss_without_a_named_cause_and_other_verdicts_stay():
    info_only = Finding("training-logic", "info", "a hint", SCRIPT, 12, None, None, {"check": "separate-permutations"})
    eval_mode = Finding(
        "training-logic", "warning", "left in eval()", SCRIPT, 34, None, None, {"check": "backward-in-eval-mode"}
    )
    diverging = flat("diverging")
    assert fold_symptoms([flat(), info_only, eval_mode]) == [flat(), info_only, eval_mode]
    permuted = labels_permuted()
    assert [f.details.get("diagnosis") for f in fold_symptoms([diverging, permuted])] == ["diverging", None]


def test_two_curve_verdicts_at_one_line_stay_two_problems():
    at_chance = flat("at-chance", line=27)
    vanishing = Finding(
        "dynamics", "warning", "vanishing gradients", SCRIPT, 27, None, None, {"diagnosis": "vanishing-gradients"}
    )
    problems = one_per_bug(sourced("doctor", [at_chance, vanishing]))
    assert [p.finding.details["diagnosis"] for p in problems] == ["at-chance", "vanishing-gradients"]


def test_overfitting_from_training_with_dropout_switched_off_is_folded_into_the_eval_mode_finding():
    """A model left in eval mode trains without dropout and overfits: the curves' verdict is its symptom."""
    overfitting = Finding(
        "dynamics", "warning", "overfitting: validation loss rose", SCRIPT, 35, None, None, {"diagnosis": "overfitting"}
    )
    left_in_eval = Finding(
        "training-logic", "warning", "GCN was switched to evaluation mode here and never back", SCRIPT, 32
    )
    left_in_eval = replace(left_in_eval, details={"check": "backward-in-eval-mode", "model": "GCN"})
    (kept,) = fold_symptoms([overfitting, left_in_eval])
    assert kept.details["symptom"] == {"diagnosis": "overfitting", "message": overfitting.message}
    assert fold_symptoms([overfitting]) == [overfitting]  # overfitting with nothing to explain it stays
    assert fold_symptoms([overfitting, labels_permuted()]) == [overfitting, labels_permuted()]  # not its cause
