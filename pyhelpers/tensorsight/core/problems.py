"""One problem per bug: the findings of every source (static rules, the doctor, debug runs) merged for Problems.

The language server calls ``one_per_bug`` when it publishes a file's diagnostics. The same bug can come from several
places: the rule on the open document, the doctor's report (which runs the rules too and observes the run), and the
agent of a debug run. Findings merge when they are at the same file, line and rank and are about the same bug: the
same rule code, or the same runtime kind, or a rule and the runtime kind it is seen as (``RuleInfo.seen_at_runtime_as``:
TS104's accumulated loss is the agent's ``memory`` finding at that line). The merged problem keeps the most
informative message (what a run observed over what a rule infers; then the longer one), the highest severity, the
rule's code, range and quick fix, and names every source. Pure.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from tensorsight.core.findings import Finding
from tensorsight.core.rules import RULES

SOURCES = ("rule", "doctor", "run")  # the order a merged problem names them in
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
            by_prediction.setdefault(("observed", *key[1:4], rule.seen_at_runtime_as, None), key)
    merged: dict[tuple[Any, ...], list[tuple[str, Finding]]] = {}
    for key, members in groups.items():
        target = by_prediction.get(key, key) if key[0] == "observed" else key
        merged.setdefault(target, []).extend(members)
    return [_merge(members) for members in merged.values()]


def _rule_of(finding: Finding) -> Any:
    code = (finding.details or {}).get("code")
    return _RULES_BY_CODE.get(code) if isinstance(code, str) else None


def _bug_key(finding: Finding) -> tuple[Any, ...]:
    where = (os.path.normcase(os.path.normpath(finding.file)), finding.line, finding.rank)
    rule = _rule_of(finding)
    if rule is not None:
        return ("rule", *where, rule.code)
    # two runtime findings of one kind at one line are different bugs when they measure different things (a rank's
    # diverging loss and its NaN grad norm); the doctor and a run report the same bug with the same metric
    metric = (finding.details or {}).get("metric")
    return ("observed", *where, finding.kind, metric if isinstance(metric, str) else None)


def _merge(members: list[tuple[str, Finding]]) -> Problem:
    sources = tuple(s for s in SOURCES if any(m[0] == s for m in members))
    sources += tuple(sorted({m[0] for m in members} - set(SOURCES)))
    findings = [f for _, f in members]
    if len(findings) == 1:
        return Problem(findings[0], sources)
    # observed over inferred, then the longer message, then the later report (a run's newer count)
    order = {id(f): n for n, f in enumerate(findings)}
    shown = max(findings, key=lambda f: (_rule_of(f) is None, len(f.message), order[id(f)]))
    details: dict[str, Any] = {}
    for finding in sorted(findings, key=lambda f: _rule_of(f) is None):  # the rule's code, range and fix win
        for name, value in (finding.details or {}).items():
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
