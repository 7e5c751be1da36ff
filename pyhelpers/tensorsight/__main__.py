"""Command line: ``python -m tensorsight doctor [--json] script.py [args...]`` and ``python -m tensorsight demo``."""

from __future__ import annotations

import sys

from tensorsight.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
