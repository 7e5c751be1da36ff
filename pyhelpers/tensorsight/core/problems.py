"""One problem per bug: the findings of every source (static rules, the doctor, debug runs) merged for Problems.

The language server calls ``one_per_bug`` and ``fold_symptoms`` when it publishes a file's diagnostics, and the doctor
(``cli/doctor.py``) when it writes its report, so both show the same problems. The same bug can come from several
places: the rule on the open document, the doctor's report (which runs the rules too and observes the run), and the
agent of a debug run. Findings merge when they are at the same file, line and rank and are about the same bug: the
same rule code, or the same runtime kind and measure (the ``metric``, ``check`` or ``diagnosis`` of its details), or a
rule and the runtime finding it is seen as (``RuleInfo.seen_at_runtime_as`` and ``seen_at_runtime_check``: TS104's
accumulated loss is the agent's ``memory`` finding at that line), also where the rule says a run observes it at
another line (``details.observed_at``: TS103 at an evaluation helper's call, observed at its ``eval()``). The merged
problem keeps the most informative message (what a run observed over what a rule infers; then the longer one), at its
place, the highest severity, the rule's code, range and quick fix (a range only at the same line, a fix only in the
same file), and names every source. A rule whose bug makes the program raise at another line (``details.raised_at``:
TS107's carried hidden state, raising at the loop's ``backward()``) and the run's explanation of that error are one
problem too, shown at the rule's line, where the fix goes, with the error's line added to its message.

A symptom is not a second bug either. A loss that barely falls (the curves' "not decreasing", "at chance" and
"learning slowly" verdicts) is what several bugs look like from the loss curve: labels reordered apart from their
inputs, an activation applied before a loss that applies it again, a prediction broadcast against a target of another
shape, parameters no optimizer updates. A validation loss that rises while the training loss falls ("overfitting")
is what training with dropout switched off looks like (a model left in eval mode). When a finding of the same
program names such a cause, ``fold_symptoms`` drops the verdict and keeps its evidence in the cause's details
(``symptom``), so the doctor and the editor show one warning, at the line to fix. Pure.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from tensorsight.core.findings import Finding, place_text
from tensorsight.core.l10n import t
from tensorsight.core.rules import RULES

SOURCES = ("rule", "doctor", "run")  # the order a merged problem names them in
FLAT_LOSS_VERDICTS = frozenset({"not-decreasing", "at-chance", "learning-slowly"})  # ``core.curves`` diagnoses
# runtime checks (``details["check"]``) and rules (``details["code"]``) whose bug leaves nothing, or little, to learn
FLAT_LOSS_CHECKS = frozenset(
    {
        "separate-permutations",  # each label beside another sample's input
        "parameters-in-no-optimizer",  # part of the model is never updated
        "parameters-never-learn",
        "frozen-at-initialisation",
        "no-gradient",
    }
)
FLAT_LOSS_RULES = frozenset({"TS105", "TS113"})  # probabilities into a loss that squashes them again
EVAL_MODE_CHECKS = frozenset({"backward-in-eval-mode"})  # a model trained in eval mode: its dropout is off
EVAL_MODE_RULES = frozenset({"TS103"})
_RULES_BY_CODE = {rule.code: rule for rule in RULES}
_SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


@dataclass(frozen=True)
class Problem:
    """One bug as Problems shows it: the merged finding and the sources that reported it (in ``SOURCES`` order)."""

    finding: Finding
    sources: tuple[str, ...]


def one_per_bug(sourced: Iterable[tuple[str, Finding]]) -> list[Problem]:
    """Merge ``(source, finding)`` pairs into one ``Problem`` per bug, in the order each bug was first reported."""
    groups: dict[tuple[Any, ...], list[tuple[str, Finding]]] = {}
    for source, finding in sourced:
        groups.setdefault(_bug_key(finding), []).append((source, finding))
    # a runtime finding joins the rule that predicts it at the same line (one rule per runtime kind and line)
    by_prediction: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for key, members in groups.items():
        rule = _rule_of(members[0][1])
        if rule is not None and rule.seen_at_runtime_as is not None:
            for where in (key[1:4], *_observed_at(members[0][1])):
                observed = ("observed", *where, rule.seen_at_runtime_as, rule.seen_at_runtime_check)
                by_prediction.setdefault(observed, key)
        if rule is not None and rule.raised_at_runtime_check is not None:
            for where in _observed_at(members[0][1], "raised_at"):
                by_prediction.setdefault(("observed", *where, rule.kind, rule.raised_at_runtime_check), key)
    merged: dict[tuple[Any, ...], list[tuple[str, Finding]]] = {}
    for key, members in groups.items():
        target = by_prediction.get(key, key) if key[0] == "observed" else key
        merged.setdefault(target, []).extend(members)
    return [_merge(members) for members in merged.values()]


def _observed_at(finding: Finding, name: str = "observed_at") -> list[tuple[Any, ...]]:
    """Where a run observes the bug a rule reports at another line (``details.observed_at``: TS103 at the call of
    an evaluation helper, observed where that helper switches the model to eval(); ``details.raised_at``: TS107's
    carried state, raising at the loop's backward())."""
    place = (finding.details or {}).get(name)
    if (
        not isinstance(place, Mapping)
        or not isinstance(place.get("file"), str)
        or not isinstance(place.get("line"), int)
    ):
        return []
    return [(os.path.normcase(os.path.normpath(place["file"])), place["line"], finding.rank)]


def _rule_of(finding: Finding) -> Any:
    code = (finding.details or {}).get("code")
    return _RULES_BY_CODE.get(code) if isinstance(code, str) else None


def _bug_key(finding: Finding) -> tuple[Any, ...]:
    where = (os.path.normcase(os.path.normpath(finding.file)), finding.line, finding.rank)
    rule = _rule_of(finding)
    if rule is not None:
        return ("rule", *where, rule.code)
    # two runtime findings of one kind at one line are different bugs when they measure different things (a rank's
    # diverging loss and its NaN grad norm) or come from different checks or diagnoses (a loss at chance level and
    # vanishing gradients, both at the loss line); the doctor and a run report the same bug with the same measure
    details = finding.details or {}
    measure = next((v for v in (details.get(k) for k in ("metric", "check", "diagnosis")) if isinstance(v, str)), None)
    return ("observed", *where, finding.kind, measure)


def _merge(members: list[tuple[str, Finding]]) -> Problem:
    sources = tuple(s for s in SOURCES if any(m[0] == s for m in members))
    sources += tuple(sorted({m[0] for m in members} - set(SOURCES)))
    findings = [f for _, f in members]
    if len(findings) == 1:
        return Problem(findings[0], sources)
    # observed over inferred, then the longer message, then the later report (a run's newer count); a rule whose
    # bug the run saw as the error it raises elsewhere is shown at its own line, where the fix goes, naming the error
    order = {id(f): n for n, f in enumerate(findings)}
    shown = max(findings, key=lambda f: (_rule_of(f) is None, len(f.message), order[id(f)]))
    raising = _raising_rule(findings)
    if raising is not None:
        rule_finding, raised = raising
        where = place_text(raised.file, raised.line, rule_finding.file)
        said = t("{message}. A run raised that error at {where}", message="", where=where)
        message = rule_finding.message if rule_finding.message.endswith(said) else rule_finding.message + said
        shown = replace(rule_finding, message=message)
    details: dict[str, Any] = {}
    for finding in sorted(findings, key=lambda f: _rule_of(f) is None):  # the rule's code, range and fix win
        for name, value in (finding.details or {}).items():
            if name in _PLACED and not _same_place(finding, shown, name):
                continue  # a rule's range or fix at another line (or file) than the problem shown
            details.setdefault(name, value)
    steps = [f.step for f in findings if f.step is not None]
    return Problem(
        replace(
            shown,
            severity=max((f.severity for f in findings), key=lambda s: _SEVERITY_RANK.get(s, 1)),
            step=min(steps) if steps else None,
            details=details,
        ),
        sources,
    )


_PLACED = ("range", "fix", "observed_at", "raised_at")  # details that hold for the finding's own place only


def _raising_rule(findings: list[Finding]) -> tuple[Finding, Finding] | None:
    """(the rule's finding, the run's explanation of the error its bug raised), when both are among ``findings``."""
    for finding in findings:
        rule = _rule_of(finding)
        if rule is None or rule.raised_at_runtime_check is None:
            continue
        for other in findings:
            if _rule_of(other) is None and (other.details or {}).get("check") == rule.raised_at_runtime_check:
                return finding, other
    return None


def _same_file(finding: Finding, other: Finding) -> bool:
    return os.path.normcase(os.path.normpath(finding.file)) == os.path.normcase(os.path.normpath(other.file))


def _same_place(finding: Finding, shown: Finding, name: str) -> bool:
    if name == "fix":  # its edits are in the finding's file, wherever in it the problem is shown
        return _same_file(finding, shown)
    return _same_file(finding, shown) and finding.line == shown.line


def is_flat_loss_verdict(finding: Finding) -> bool:
    """A curve verdict on a loss that barely falls (``FLAT_LOSS_VERDICTS``)."""
    return finding.kind == "dynamics" and (finding.details or {}).get("diagnosis") in FLAT_LOSS_VERDICTS


def keeps_the_loss_flat(finding: Finding) -> bool:
    """A warning or error whose bug keeps a loss from falling however long the model trains."""
    if finding.severity not in ("warning", "error"):
        return False
    details = finding.details or {}
    if finding.kind == "shape":
        return isinstance(details.get("op"), str) and isinstance(details.get("result"), list)  # a silent broadcast
    return details.get("check") in FLAT_LOSS_CHECKS or details.get("code") in FLAT_LOSS_RULES


def trains_without_regularization(finding: Finding) -> bool:
    """A warning or error whose bug trains the model in eval mode: dropout off, batch-norm statistics frozen."""
    if finding.severity not in ("warning", "error"):
        return False
    details = finding.details or {}
    return details.get("check") in EVAL_MODE_CHECKS or details.get("code") in EVAL_MODE_RULES


def is_overfitting_verdict(finding: Finding) -> bool:
    """The curves' "overfitting" verdict (validation loss rising while the training loss falls)."""
    return finding.kind == "dynamics" and (finding.details or {}).get("diagnosis") == "overfitting"


# (what a symptom is, what explains it): a flat loss by a bug that leaves nothing to learn; overfitting by training
# with the regularization of dropout switched off
SYMPTOMS = (
    (is_flat_loss_verdict, keeps_the_loss_flat),
    (is_overfitting_verdict, trains_without_regularization),
)


def fold_symptoms(findings: Iterable[Finding], causes: Iterable[Finding] = ()) -> list[Finding]:
    """``findings`` without the verdicts (``SYMPTOMS``) that a cause among them (or among ``causes``, the rest of the
    program's findings) explains. The first cause in ``findings`` keeps the first dropped verdict's diagnosis and
    message in its details, under ``symptom``."""
    found, others = list(findings), list(causes)
    for is_symptom, explains in SYMPTOMS:
        found = _fold(found, others, is_symptom, explains)
    return found


def _fold(
    found: list[Finding],
    causes: list[Finding],
    is_symptom: Callable[[Finding], bool],
    explains: Callable[[Finding], bool],
) -> list[Finding]:
    explaining = [f for f in found if explains(f)]
    if not explaining and not any(explains(f) for f in causes):
        return found
    symptoms = [f for f in found if is_symptom(f)]
    if not symptoms:
        return found
    kept = [f for f in found if not is_symptom(f)]
    if explaining:
        first = explaining[0]
        symptom = {"diagnosis": symptoms[0].details.get("diagnosis"), "message": symptoms[0].message}
        kept = [replace(f, details={**f.details, "symptom": symptom}) if f is first else f for f in kept]
    return kept


def sourced(source: str, findings: Iterable[Finding]) -> list[tuple[str, Finding]]:
    """``findings`` tagged with their ``source`` for ``one_per_bug``."""
    return [(source, f) for f in findings]


def finding_from_report(raw: Mapping[str, Any]) -> Finding | None:
    """A finding of a tool's JSON report (the shared wire form), or None when it is malformed."""
    try:
        finding = Finding.from_dict(raw)
    except ValueError:
        return None
    return finding if finding.line >= 1 else None
