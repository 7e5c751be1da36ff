"""Whether a finding's message repeats one of its fields in words ("... at step 12" with ``step`` 12).

The step and the rank of a finding are fields; whoever shows the finding adds them once
(``tensorsight.core.findings.finding_context``). Used by tests/core/test_finding_fields.py on the message builders and
by tests/cli/test_realistic_suite.py on the doctor's findings over the realistic programs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# the words the catalogues use for a step and a rank (English and Spanish)
_STEP_WORDS = ("step", "steps", "paso", "pasos")
_RANK_WORDS = ("rank", "ranks")


def repeated_fields(finding: Mapping[str, Any]) -> list[str]:
    """The fields (``step``, ``rank``) whose value the message also says in words; [] when it says neither."""
    message = str(finding.get("message", ""))
    repeated = []
    for name, words in (("step", _STEP_WORDS), ("rank", _RANK_WORDS)):
        value = finding.get(name)
        if value is None:
            continue
        word = "|".join(words)
        # "step 12", "steps 3–12" or "steps 12–30"
        said = rf"\b(?:{word})\s+(?:\d+\s*[–-]\s*)?{int(value)}\b|\b(?:{word})\s+{int(value)}\s*[–-]"
        if re.search(said, message, flags=re.IGNORECASE):
            repeated.append(name)
    return repeated
