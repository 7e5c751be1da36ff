"""The first-NaN stop, debugger and doctor side by side: a rate, not a time.

For each program, ``--sessions`` fresh Debug Training sessions (a real ``python -m debugpy.adapter``,
``breakOnNonFinite`` on, ``justMyCode`` as the extension launches it) and one ``python -m tensorsight doctor --json``
run; it prints how many sessions stopped on the line that makes the first NaN/Inf (``# @nan`` in the file that makes
it), where the others stopped, and the line the doctor's ``nonfinite`` finding names. One engine decides both, so the
two columns must agree.

The programs are written the way the code that meets these NaNs is written (``tests/programs/first_nan``):

- ``logistic_module_level.py``: a hand-written logistic regression at module level (no ``nn.Module``, a hand-written
  update); ``torch.log(1 - h)`` makes -Inf after about 140 epochs;
- ``softmax_while_isnan.py``: a ``while True:`` softmax regression that exits on ``torch.isnan(loss)`` before any
  ``backward()``;
- ``library_loss/train.py``: a loss class in its own module (``losses.py``) whose Dice term divides 0 by 0 in a sanity
  check before training; the program exits on the NaN;
- ``masked_attention.py``: a Transformer with a hand-written masked softmax over a fully padded sequence;
- ``custom_function.py``: an RMSNorm as a custom ``autograd.Function`` whose backward divides by zero;
- ``backward_first_step.py``: the NaN of sqrt's gradient at 0, in the first step;
- ``tests/programs/hand_loss/train.py``: a hand-written cross-entropy, past the always-checked first steps, in its own
  module and inline (``--inline``);
- the repository's NaN examples (``examples/nan_*.py``).

``--python`` runs adapter, program and doctor under another interpreter (one with torch and debugpy:
``.venvs/torch3.12``).

    .venv/bin/python benchmarks/bench_first_nan.py [--sessions 5] [--python PATH] [--only NAME]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))

from support.dap import DapError, DebugSession  # noqa: E402
from support.paths import PYHELPERS, PYTHON, example, marked_lines, program  # noqa: E402

HAND_LOSS = program("hand_loss/train.py")


def _family(name: str, marked: str = "") -> tuple[str, str, tuple[str, ...], str, str]:
    path = program(f"first_nan/{name}")
    return (name, path, (), program(f"first_nan/{marked}") if marked else path, "")


CASES = [
    _family("logistic_module_level.py"),
    _family("softmax_while_isnan.py"),
    _family("library_loss/train.py", "library_loss/losses.py"),
    _family("masked_attention.py"),
    _family("custom_function.py"),
    _family("backward_first_step.py"),
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
            stop = session.wait_for_stop_or_exit(timeout=240)
            if stop is None:
                return "no stop", 0
            frame = session.top_frame(stop)
            return frame["source"].get("path", "?"), int(frame["line"])
    except DapError:
        return "no stop", 0


def doctor_line(path: str, args: tuple[str, ...], python: str) -> tuple[str, int]:
    """The file and line of the doctor's first ``nonfinite`` finding, or ("no finding", 0)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORSIGHT_")}
    env["PYTHONPATH"] = PYHELPERS
    command = [python, "-m", "tensorsight", "doctor", "--json", path, *args]
    proc = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=os.path.dirname(path), timeout=300, check=False
    )
    try:
        findings = json.loads(proc.stdout)["findings"]
    except (ValueError, KeyError):
        return "no report", 0
    for finding in findings:
        if finding.get("kind") == "nonfinite":
            return os.path.abspath(finding["file"]), int(finding["line"])
    return "no finding", 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--python", default=PYTHON, help="interpreter with torch and debugpy (default: .venv)")
    parser.add_argument("--only", help="run the cases whose name contains this")
    args = parser.parse_args()
    args.python = os.path.abspath(args.python)  # the launcher starts the program from its own folder
    print(f"First-NaN stop, {args.sessions} fresh debug sessions and one doctor run per program ({args.python})")
    total = hits = doctor_hits = cases = agree = 0
    for name, path, extra, marked, label in CASES:
        if args.only and args.only not in name:
            continue
        want = (marked, marked_lines(marked, "@nan")[label])
        began = time.perf_counter()
        stops = collections.Counter(stop_of(path, extra, args.python) for _ in range(args.sessions))
        seconds = (time.perf_counter() - began) / args.sessions
        doctor = doctor_line(path, extra, args.python)
        right = stops.get(want, 0)
        total, hits, cases = total + args.sessions, hits + right, cases + 1
        doctor_hits += doctor == want
        agree += set(stops) == {doctor}
        elsewhere = ", ".join(f"{os.path.basename(f)}:{n}x{c}" for (f, n), c in stops.items() if (f, n) != want) or "-"
        said = "on the line" if doctor == want else f"{os.path.basename(doctor[0])}:{doctor[1]}"
        print(
            f"  {name:<30} debugger {right:>2}/{args.sessions} on line {want[1]:<4} elsewhere: {elsewhere:<24}"
            f" doctor: {said}  ({seconds:.1f} s a session)"
        )
    print(f"  all: debugger {hits}/{total}, doctor {doctor_hits}/{cases}, same verdict {agree}/{cases}")


if __name__ == "__main__":
    main()
