"""Well-known paths of the repository, for tests."""

from __future__ import annotations

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYHELPERS = os.path.join(REPO, "pyhelpers")
EXAMPLES = os.path.join(REPO, "examples")
PROGRAMS = os.path.join(REPO, "tests", "programs")
PYTHON = sys.executable


def program(name: str) -> str:
    """Path of a test program in tests/programs."""
    return os.path.join(PROGRAMS, name)


def example(name: str) -> str:
    """Path of an example script in examples/."""
    return os.path.join(EXAMPLES, name)


def marked_lines(path: str, marker: str = "@bp") -> dict[str, int]:
    """Map ``# @bp name`` comments in a test program to their 1-based line numbers (debugpy test-suite style).

    A bare ``# @bp`` is keyed by the empty string.
    """
    found: dict[str, int] = {}
    with open(path, encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            idx = text.find("# " + marker)
            if idx >= 0:
                label = text[idx + len(marker) + 2 :].strip()
                found[label] = number
    return found
