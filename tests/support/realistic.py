"""The realistic suite (tests/programs/realistic/): discovers its scripts, reads their ``# BUG:`` markers, runs the
doctor over them and scores what it found. Used by tests/cli/test_realistic_suite.py and
benchmarks/bench_doctor_suite.py.

Suites (:data:`SUITES`): ``realistic`` (the default) and ``heldout`` (tests/programs/heldout/: programs written apart
from the doctor's checks, in the manner of public PyTorch examples, to measure it from outside; only the benchmark
reads it, ``discover()`` without a root stays on the realistic suite). Both have the same layout and markers.

Layout: ``tests/programs/<suite>/<family>/clean.py`` and ``<family>/bug_<what>.py``; a family may have helper
modules (``trainer.py``, ``engine.py``...) that its scripts import as top-level modules (the doctor, like
``python script.py``, puts the script's folder first on ``sys.path``).

Markers: a trailing comment ``# BUG: <kind>[|<kind>...] <free text>`` on the line where a user expects the finding.
The kinds are finding kinds (tensorsight.core.findings.KINDS); several separated by ``|`` are alternatives (any one
of them finds the bug). A bug script's markers are those in the script and in the sibling modules it imports
(transitively), so a bug may live in a helper module of its own (``trainer_without_zero_grad.py``); a clean script
and everything it imports carry none. A value that is wrong is marked where it is written: a learning rate taken
from ``add_argument("--lr", default=...)`` and used unchanged is marked on that line, as the held-out suite marks it;
probabilities a loss takes for logits are marked at the softmax or sigmoid that made them (in the model's file);
a model left in eval mode is marked once, at the ``eval()`` that leaves it there, however deep the helper or callback
that calls it; gradients never cleared are marked at the ``backward()`` a step applies when there is one per step
(its ``zero_grad()`` belongs right above it; a hand-written update too), at the step when it applies several
(accumulation, a GAN, a closure);
a graph walked twice ("backward through the graph a second time") is marked where the reused tensor fed the first
loss without ``.detach()``.

Scoring, per script:
- a marker is *found* when a warning or error finding of one of its kinds is at its file and exact line; a marker
  that ends a statement spread over several lines (a formatter puts the trailing comment after the closing
  bracket) stands for every line of that statement, so a finding at its first line is found too;
- a *false alarm* is a warning or error finding that matches no marker by file, line and kind (on a clean script,
  every warning and error is one); info findings count neither way.

Learning: every clean script prints its losses, one per line, as ``... loss: <number>`` (``loss`` as a word, case
insensitive, then ``:`` or ``=`` or spaces); :func:`losses_printed` reads them back so a test can check that the last
is below the first, i.e. that the clean script really learns and its silence is not vacuous.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import time
import tokenize
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from support.paths import PROGRAMS, PYHELPERS, PYTHON
from tensorsight.core.findings import KINDS

REALISTIC = os.path.join(PROGRAMS, "realistic")
HELDOUT = os.path.join(PROGRAMS, "heldout")
SUITES = {"realistic": REALISTIC, "heldout": HELDOUT}
DEFAULT_SUITE = "realistic"
COUNTED_SEVERITIES = ("warning", "error")
DEFAULT_TIMEOUT = 300.0  # seconds per run: generous, the machine running the suite may be busy
DEFAULT_WORKERS = 2

_MARKER = re.compile(r"#\s*BUG:\s*([a-z|-]+)(.*)$")
_LOSS = re.compile(r"\bloss\b\s*[:=]?\s*([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))", re.IGNORECASE)


@dataclass(frozen=True)
class Marker:
    """One injected bug: where the finding is expected and which kinds find it."""

    file: str
    line: int
    kinds: frozenset[str]
    note: str = ""
    first: int | None = None  # the first line of the multi-line statement the marker ends, if any

    def matches(self, finding: dict[str, Any]) -> bool:
        line = finding.get("line")
        return (
            finding.get("kind") in self.kinds
            and isinstance(line, int)
            and (self.first if self.first is not None else self.line) <= line <= self.line
            and _same_file(str(finding.get("file", "")), self.file)
        )

    def where(self) -> str:
        return f"{os.path.basename(self.file)}:{self.line} {'|'.join(sorted(self.kinds))}"


@dataclass(frozen=True)
class Script:
    """One script of the suite, with the markers of its bug (none for a clean script)."""

    family: str
    path: str
    markers: tuple[Marker, ...]

    @property
    def name(self) -> str:
        """``family/file.py``: the id tests and the benchmark use."""
        return f"{self.family}/{os.path.basename(self.path)}"

    @property
    def clean(self) -> bool:
        return os.path.basename(self.path) == "clean.py"


@dataclass
class Run:
    """One execution of a script: by the doctor (``document`` is its JSON report) or plainly (``document`` is None)."""

    script: Script
    returncode: int
    seconds: float
    output: str  # the script's own prints (stderr under ``doctor --json``, stdout otherwise)
    document: dict[str, Any] | None = None
    problem: str = ""  # why the run gave no usable report: a timeout, unreadable JSON


@dataclass
class Score:
    """What the doctor found on one script, against its markers."""

    script: Script
    found: list[Marker] = field(default_factory=list)
    missed: list[Marker] = field(default_factory=list)
    false_alarms: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""  # the script stopped with an exception, or the doctor gave no report

    @property
    def perfect(self) -> bool:
        return not self.missed and not self.false_alarms and not self.error


# ---- discovery -----------------------------------------------------------------------------------------------------


def parse_markers(path: str) -> list[Marker]:
    """The ``# BUG:`` markers in one file (comments only, so a string mentioning one is not a marker); raises
    ValueError on a kind outside KINDS."""
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    found = []
    starts = _statement_starts(source)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        match = _MARKER.search(token.string)
        if match is None:
            continue
        kinds = frozenset(match.group(1).split("|"))
        unknown = sorted(kinds - set(KINDS))
        if unknown:
            raise ValueError(f"{path}:{token.start[0]}: unknown finding kind(s) {unknown} in a BUG marker")
        line = token.start[0]
        found.append(Marker(os.path.realpath(path), line, kinds, match.group(2).strip(), starts.get(line)))
    return found


def _statement_starts(source: str) -> dict[int, int]:
    """``{last line: first line}`` of the simple statements (no body: assignments, calls...) that span several
    lines, so a trailing marker after a closing bracket names the whole statement."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    starts: dict[int, int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or hasattr(node, "body") or node.end_lineno is None:
            continue
        if node.end_lineno > node.lineno:
            starts[node.end_lineno] = min(node.lineno, starts.get(node.end_lineno, node.lineno))
    return starts


def sibling_imports(path: str) -> list[str]:
    """The modules of the script's folder that it imports, transitively (itself excluded), in a stable order."""
    import ast

    folder = os.path.dirname(os.path.realpath(path))
    seen: list[str] = []
    pending = [os.path.realpath(path)]
    while pending:
        current = pending.pop()
        with open(current, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), current)
        names: list[str] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.extend(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.append(node.module.split(".")[0])
        for name in names:
            candidate = os.path.join(folder, name + ".py")
            if os.path.isfile(candidate) and candidate not in seen and candidate != os.path.realpath(path):
                seen.append(candidate)
                pending.append(candidate)
    return seen


def suite_root(suite: str) -> str:
    """The folder of a named suite (a key of :data:`SUITES`); raises ValueError on another name."""
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; expected one of {', '.join(SUITES)}")
    return SUITES[suite]


def discover(root: str = REALISTIC) -> list[Script]:
    """Every ``clean.py`` and ``bug_*.py`` under ``root`` (a suite's folder, see :func:`suite_root`), family by
    family; raises ValueError when a clean script (or a module it imports) carries a marker, or a bug script has
    none."""
    scripts = []
    for family in sorted(os.listdir(root)):
        folder = os.path.join(root, family)
        if not os.path.isdir(folder) or family.startswith((".", "_")):
            continue
        for entry in sorted(os.listdir(folder), key=lambda n: (n != "clean.py", n)):
            if entry != "clean.py" and not (entry.startswith("bug_") and entry.endswith(".py")):
                continue
            path = os.path.realpath(os.path.join(folder, entry))
            markers = [m for source in [path, *sibling_imports(path)] for m in parse_markers(source)]
            script = Script(family, path, tuple(markers))
            if script.clean and markers:
                raise ValueError(f"{script.name} is clean but carries markers: {[m.where() for m in markers]}")
            if not script.clean and not markers:
                raise ValueError(f"{script.name} is a bug variant without a '# BUG: <kind>' marker")
            scripts.append(script)
    return scripts


# ---- running -------------------------------------------------------------------------------------------------------


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORSIGHT_")}
    env["PYTHONPATH"] = PYHELPERS
    env["PYTHONHASHSEED"] = "0"
    # Two scripts run side by side on a small machine: one intra-op thread each, or torch's spinning threads make
    # tiny models tens of times slower under load (the same setting for the doctor and the plain run).
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def run_doctor(script: Script, timeout: float = DEFAULT_TIMEOUT, python: str = PYTHON) -> Run:
    """``python -m tensorsight doctor --json <script>`` from the script's folder, with pyhelpers on PYTHONPATH."""
    command = [python, "-m", "tensorsight", "doctor", "--json", script.path]
    return _run(script, command, timeout, doctor=True)


def run_plain(script: Script, timeout: float = DEFAULT_TIMEOUT, python: str = PYTHON) -> Run:
    """``python <script>`` from the script's folder: the baseline of the doctor's overhead."""
    return _run(script, [python, script.path], timeout, doctor=False)


def _run(script: Script, command: list[str], timeout: float, doctor: bool) -> Run:
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            command,
            capture_output=True,
            text=True,
            env=_environment(),
            cwd=os.path.dirname(script.path),
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        output = exc.stderr if doctor else exc.stdout
        text = output.decode(errors="replace") if isinstance(output, bytes) else (output or "")
        return Run(script, -1, time.perf_counter() - started, text, problem=f"timed out after {timeout:g} s")
    seconds = time.perf_counter() - started
    if not doctor:
        problem = "" if proc.returncode == 0 else f"exit status {proc.returncode}: {proc.stderr[-2000:]}"
        return Run(script, proc.returncode, seconds, proc.stdout, problem=problem)
    try:
        document = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return Run(script, proc.returncode, seconds, proc.stderr, problem=f"no JSON report: {proc.stderr[-2000:]}")
    return Run(script, proc.returncode, seconds, proc.stderr, document=document)


def run_all(
    scripts: Sequence[Script],
    runner: Callable[[Script], Run] = run_doctor,
    workers: int = DEFAULT_WORKERS,
) -> dict[str, Run]:
    """Each script through ``runner`` on a small pool (the scripts are short; two run side by side)."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return {run.script.name: run for run in pool.map(runner, scripts)}


# ---- scoring -------------------------------------------------------------------------------------------------------


def _same_file(a: str, b: str) -> bool:
    return bool(a) and os.path.realpath(a) == os.path.realpath(b)


def counted(findings: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The findings a user is alerted by: warnings and errors."""
    return [f for f in findings if f.get("severity") in COUNTED_SEVERITIES]


def score(run: Run) -> Score:
    """Found, missed and false alarms of one doctor run (see the module docstring)."""
    result = Score(run.script)
    if run.document is None:
        result.error = run.problem or "no report"
        result.missed = list(run.script.markers)
        return result
    alerts = counted(run.document.get("findings", []))
    for marker in run.script.markers:
        (result.found if any(marker.matches(f) for f in alerts) else result.missed).append(marker)
    result.false_alarms = [f for f in alerts if not any(m.matches(f) for m in run.script.markers)]
    result.error = str(run.document.get("error") or run.problem or "")
    return result


def describe_finding(finding: dict[str, Any]) -> str:
    """A one-line form of a finding for failure messages and the benchmark's table."""
    where = f"{os.path.basename(str(finding.get('file', '?')))}:{finding.get('line')}"
    return f"{where} {finding.get('kind')}/{finding.get('severity')}: {str(finding.get('message', ''))[:160]}"


def losses_printed(output: str) -> list[float]:
    """The losses a script printed, in order: the first ``loss: <number>`` of each line."""
    values = []
    for line in output.splitlines():
        match = _LOSS.search(line)
        if match is not None:
            values.append(float(match.group(1)))
    return values
