"""How often a fresh Debug Training session stops on the line that made the first NaN/Inf: a rate, not a time.

The sentinel checks ops outside modules op by op only in the steps its cost budget allows, and the budget reads the
clock, so which steps are checked changes from run to run. The stop must not: in a step that was not checked, the
loss's autograd graph names the op (``agent/sentinel/graph_search.py``). This runs ``--sessions`` fresh debug
sessions (a real ``python -m debugpy.adapter``, ``breakOnNonFinite`` on, ``justMyCode`` as the extension launches
it) on programs whose first NaN/Inf is born past the always-checked first steps, and prints, per program, how many
stopped on the marked line (``# @nan`` in the file that makes it) and where the others stopped:

- ``tests/programs/hand_loss/train.py``: a hand-written cross-entropy in its own module (``losses.py``), Adam, a
  StepLR; its ``torch.log`` makes the first -Inf at step 66;
- the same with the loss written inline in the training loop (``--inline``);
- the repository's NaN examples (``examples/nan_*.py``), whose births come in the first steps.

``--python`` runs adapter and program under another interpreter (one with torch and debugpy: ``.venvs/torch3.12``).

    .venv/bin/python benchmarks/bench_first_nan.py [--sessions 10] [--python PATH]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))

from support.dap import DapError, DebugSession  # noqa: E402
from support.paths import PYTHON, example, marked_lines, program  # noqa: E402

HAND_LOSS = program("hand_loss/train.py")
CASES = [
    ("hand_loss (loss in losses.py)", HAND_LOSS, (), program("hand_loss/losses.py"), ""),
    ("hand_loss --inline", HAND_LOSS, ("--inline",), HAND_LOSS, "inline"),
    ("nan_log_zero.py", example("nan_log_zero.py"), (), example("nan_log_zero.py"), ""),
    ("nan_overflow_inf.py", example("nan_overflow_inf.py"), (), example("nan_overflow_inf.py"), ""),
    ("nan_sqrt_backward.py", example("nan_sqrt_backward.py"), (), example("nan_sqrt_backward.py"), ""),
]


def stop_of(path: str, args: tuple[str, ...], python: str) -> tuple[str, int]:
    """Where one fresh session stopped: (file, line), or ("no stop", 0)."""
    launch = {"justMyCode": True}
    try:
        with DebugSession.launch(
            path, args=args, options={"breakOnNonFinite": True}, timeout=120, python=python, extra_launch=launch
        ) as session:
            stop = session.wait_for_stop(timeout=240)
            frame = session.top_frame(stop)
            return frame["source"].get("path", "?"), int(frame["line"])
    except DapError:
        return "no stop", 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--python", default=PYTHON, help="interpreter with torch and debugpy (default: .venv)")
    parser.add_argument("--only", help="run the cases whose name contains this")
    args = parser.parse_args()
    args.python = os.path.abspath(args.python)  # the launcher starts the program from its own folder
    print(f"First-NaN stop, {args.sessions} fresh debug sessions per program ({args.python})")
    total = hits = 0
    for name, path, extra, marked, label in CASES:
        if args.only and args.only not in name:
            continue
        want = (marked, marked_lines(marked, "@nan")[label])
        began = time.perf_counter()
        stops = collections.Counter(stop_of(path, extra, args.python) for _ in range(args.sessions))
        right = stops.pop(want, 0)
        total, hits = total + args.sessions, hits + right
        elsewhere = ", ".join(f"{os.path.basename(f)}:{line} x{n}" for (f, line), n in stops.items()) or "-"
        seconds = (time.perf_counter() - began) / args.sessions
        rate = f"{right:>2}/{args.sessions} on line {want[1]}"
        print(f"  {name:<32} {rate}  elsewhere: {elsewhere}  ({seconds:.1f} s each)")
    print(f"  all: {hits}/{total}")


if __name__ == "__main__":
    main()
