"""Which findings of a doctor's ``--json`` report a run observed, as opposed to a static rule alone.

The doctor merges a rule's finding with the run's finding of the same bug (``core.problems.one_per_bug``, what
Problems shows); the merged finding keeps the rule's ``code`` and names both sources in ``details.sources``. Used by
the doctor tests under tests/cli and by tests/frameworks/runs.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def observed(finding: Mapping[str, Any]) -> bool:
    """The run saw it: no rule code, or a rule's finding the run reported too."""
    details = finding.get("details") or {}
    return "code" not in details or "doctor" in details.get("sources", ())
