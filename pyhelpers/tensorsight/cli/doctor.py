"""Headless doctor: run a training script with the agent armed (no debugger), add the static rules, print findings.

``python -m tensorsight doctor [--json] [--set KEY=JSON ...] [--timeout S] [--max-steps N] script.py [args...]``

The static rules look at the script and at the project files its imports reach (``static_findings``), so a bug in a
trainer class in ``trainer.py`` is reported at its line there; ``--no-run`` gives those findings alone.

The script runs in this process as ``__main__`` (like ``python script.py``) with the same agent hooks a debug
session gets; its own output goes to stderr when ``--json`` is asked, so stdout stays one JSON document. Exit status:
0 when no finding is an error, 1 when one is or the script failed (an exception, a syntax error, a non-zero
exit), 2 when the doctor itself was misused (no such script, a folder, a bad ``--set``). Besides findings, the
report carries the shape map of the model's first forward pass (``shapeMap`` in ``--json``). ``--png DIR`` writes
the viewer's pictures of the first NaN/Inf's tensors (``display/picture.py``) there, listed as ``pictures``.

The report is printed however the run ends: ``--timeout`` and ``--max-steps`` stop a script that would run on and give
a report marked partial (``partial`` in ``--json``: reason, limit, steps); so do Ctrl+C and SIGTERM (what the editor
sends when its user cancels Run Doctor): ``partial.reason`` is "interrupted", ``partial.signal`` names the signal,
and the exit status is then the shell's for that signal (130 for Ctrl+C, 143 for SIGTERM), report printed first.
Where the script was when it was stopped is printed on stderr, ending at the user's own line. A script that ends the
process itself with ``os._exit(n)`` gets the report of what was found before it.
"""

from __future__ import annotations

import argparse
import os
import signal
import stat
import sys
from dataclasses import replace
from typing import IO, Any

from tensorsight.agent.runtime import script_runner
from tensorsight.agent.runtime.script_runner import Limits, ScriptOutcome
from tensorsight.cli import prelude
from tensorsight.core import protocol
from tensorsight.core.findings import Finding, findings_document, format_finding
from tensorsight.core.l10n import t

# Launch options the doctor arms by default: everything that observes without stopping.
DOCTOR_OPTIONS: dict[str, Any] = {
    "breakOnNonFinite": True,
    "measure": True,
    "observeShapes": True,
    "checkLeakage": True,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document {findings: [...]}")
    prelude.add_set_argument(parser)
    parser.add_argument("--no-run", action="store_true", help="static rules only; do not execute the script")
    parser.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="stop the script after SECONDS and print a partial report"
    )
    parser.add_argument(
        "--max-steps", type=int, metavar="N", help="stop the script after N optimizer steps; partial report"
    )
    parser.add_argument(
        "--png",
        metavar="DIR",
        help="write the viewer's pictures of the first NaN/Inf's tensors (op output and inputs) as PNGs in DIR",
    )
    prelude.add_script_arguments(parser, "the training script to run")


def limits_of(args: argparse.Namespace) -> Limits:
    """``--timeout`` and ``--max-steps`` as limits of the run; raises ValueError on a non-positive value."""
    if args.timeout is not None and not args.timeout > 0:
        raise ValueError(f"--timeout expects a positive number of seconds, got {args.timeout:g}")
    if args.max_steps is not None and args.max_steps < 1:
        raise ValueError(f"--max-steps expects a positive number of steps, got {args.max_steps}")
    return Limits(timeout=args.timeout, max_steps=args.max_steps, stop_on_signals=True)


MAX_PROJECT_SOURCE_BYTES = 2 << 20  # a project file bigger than this is not parsed (generated code, data in .py)


def static_findings(path: str) -> list[Finding]:
    """Findings of the static rules on the script's source (decoded as Python does, PEP 263) and on the project
    files its imports reach (the script's folder, and the working directory when the script lies inside it): parsed,
    never imported. None when the script cannot be decoded (the run then reports why)."""
    from tensorsight.core import rules

    try:
        source = script_runner.read_source(path)
    except (OSError, SyntaxError):
        return []
    script = os.path.abspath(path)
    roots = [os.getcwd()] if _inside(script, os.getcwd()) else []
    return list(rules.analyze_project(source, script, _project_source, roots))


def _project_source(path: str) -> str | None:
    """A project file's text for the rules: a regular file of bounded size, decoded as Python does; else None."""
    try:
        status = os.stat(path)
        if not stat.S_ISREG(status.st_mode) or status.st_size > MAX_PROJECT_SOURCE_BYTES:
            return None
        return script_runner.read_source(path)
    except (OSError, SyntaxError, ValueError):
        return None


def _inside(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, os.path.abspath(folder)]) == os.path.abspath(folder)
    except ValueError:  # another drive on Windows
        return False


class DoctoredRun:
    """One run of the script under the agent: the findings it produced, and the shape map of its first forward."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.shape_map: dict[str, Any] | None = None
        self._unsubscribe: Any = None
        self._finished = False

    def _collect(self, event: dict[str, Any]) -> None:
        if event.get("type") == "finding":
            self.findings.append(Finding.from_dict(event["finding"]))
        elif event.get("type") == "shape-map" and self.shape_map is None:
            self.shape_map = {k: v for k, v in event.items() if k not in ("type", "pid", "time")}

    def start(self, options: dict[str, Any], origin: str = "doctor") -> None:
        from tensorsight.agent.runtime import events

        self._unsubscribe = events.subscribe(self._collect, ("finding", "shape-map"))
        prelude.install_agent(options, origin)

    def finish(self, outcome: ScriptOutcome) -> list[Finding]:
        """Explain the script's exception, let every feature flush (``run-finished``); idempotent."""
        if not self._finished:
            self._finished = True
            from tensorsight.agent.runtime import events
            from tensorsight.agent.runtime import excepthook as exceptions

            try:
                if outcome.exception is not None:
                    self.findings.extend(exceptions.explain(outcome.exception))
            finally:
                events.send(protocol.RunFinishedEvent(error=outcome.error))
                if self._unsubscribe is not None:
                    self._unsubscribe()
        return self.findings


def build_document(
    static: list[Finding], doctored: DoctoredRun | None, outcome: ScriptOutcome | None, limits: Limits
) -> dict[str, Any]:
    """The report: ``{findings, shapeMap?, error?, partial?}`` (see the module docstring)."""
    from tensorsight.core.problems import fold_symptoms, one_per_bug, sourced

    found = sourced("rule", static)
    if doctored is not None and outcome is not None:
        found += sourced("doctor", doctored.finish(outcome))
    # what the editor's Problems shows: one finding per bug, a flat loss folded into the bug that explains it
    # (a rule's finding that the run observed too says so: ``details.sources``)
    merged = [
        replace(p.finding, details={**p.finding.details, "sources": list(p.sources)})
        if len(p.sources) > 1
        else p.finding
        for p in one_per_bug(found)
    ]
    document = findings_document(fold_symptoms(merged))
    if doctored is not None and doctored.shape_map is not None:
        document["shapeMap"] = doctored.shape_map
    if outcome is not None and outcome.error:
        document["error"] = outcome.error
    if outcome is not None and outcome.limit:
        document["partial"] = _partial(outcome, limits)
    return document


def _partial(outcome: ScriptOutcome, limits: Limits) -> dict[str, Any]:
    if outcome.limit == "interrupted":
        name = signal.Signals(outcome.signal_number or signal.SIGINT).name
        why = t("interrupted ({0}) at step {1}", name, outcome.steps)
        message = t("partial report: the script was {0}; the findings cover only what ran until then", why)
        return {"reason": "interrupted", "signal": name, "limit": None, "steps": outcome.steps, "message": message}
    if outcome.limit == "timeout":
        limit: float | int | None = limits.timeout
        why = t("stopped after {0} s (--timeout), at step {1}", f"{limits.timeout:g}", outcome.steps)
    else:
        limit = limits.max_steps
        why = t("stopped after {0} optimizer step(s) (--max-steps)", outcome.steps)
    message = t("partial report: the script was {0}; the findings cover only what ran until then", why)
    return {"reason": outcome.limit, "limit": limit, "steps": outcome.steps, "message": message}


def publish(document: dict[str, Any], as_json: bool, stream: IO[str]) -> int:
    """Print the report (JSON or text) on ``stream``; the doctor's exit status (128 + the signal's number for an
    interrupted run)."""
    if as_json:
        prelude.write_json(document, stream)
    else:
        print_report(document, stream)
    stream.flush()
    partial = document.get("partial") or {}
    if partial.get("reason") == "interrupted":  # as a shell reports a process a signal ended: 128 + its number
        return 128 + int(getattr(signal.Signals, str(partial.get("signal")), signal.SIGINT))
    severities = {f["severity"] for f in document["findings"]}
    return 1 if "error" in severities or document.get("error") else 0


def run(args: argparse.Namespace) -> int:
    path = args.script
    refused = prelude.check_script("doctor", path)
    if refused is not None:
        return refused
    try:
        options = {**DOCTOR_OPTIONS, **prelude.parse_overrides(args.set)}
        limits = limits_of(args)
    except ValueError as exc:
        return prelude.refuse("doctor", str(exc))
    stdout = sys.stdout  # the report's stream, also while the script's prints go to stderr
    static = static_findings(path)
    if args.no_run:
        return publish(build_document(static, None, None, limits), args.json, stdout)
    doctored = DoctoredRun()

    def report_before_exit(outcome: ScriptOutcome) -> int:
        return publish(build_document(static, doctored, outcome, limits), args.json, stdout)

    doctored.start(options)
    with prelude.script_output(args.json):
        outcome = script_runner.run_script(path, list(args.args), limits=limits, on_hard_exit=report_before_exit)
    document = build_document(static, doctored, outcome, limits)
    if args.png:
        document["pictures"] = first_nonfinite_pictures(args.png)
    return publish(document, args.json, stdout)


MAX_PICTURED_INPUTS = 4  # the first NaN op's inputs drawn beside its output
PICTURE_BUDGET_S = 1.0  # each picture's time budget (the viewer's: past it, what is done)


def first_nonfinite_pictures(folder: str) -> list[str]:
    """PNG files of the first NaN/Inf's tensors (``--png DIR``): the op's output, then its first inputs that are
    tensors, drawn by the viewer (``display/picture.py``); the paths written, none when no NaN/Inf was born. Bounded
    (MAX_PICTURED_INPUTS, PICTURE_BUDGET_S each) and never fatal: a picture that cannot be made is skipped."""
    from tensorsight.agent.display.picture import save_png
    from tensorsight.agent.runtime.user_libs import is_array, is_tensor
    from tensorsight.agent.sentinel import last_nonfinite

    record = last_nonfinite()
    if record is None:
        return []
    named = [("output", record.output)]
    inputs = [v for v in record.inputs if is_tensor(v) or is_array(v)][:MAX_PICTURED_INPUTS]
    named += [(f"input{i}", v) for i, v in enumerate(inputs)]
    written = []
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return []
    for name, value in named:
        if not (is_tensor(value) or is_array(value)):
            continue
        path = os.path.join(folder, f"first-nonfinite-{name}.png")
        try:
            if save_png(value, path, budget_s=PICTURE_BUDGET_S):
                written.append(path)
        except OSError:
            continue
    return written


def print_report(document: dict[str, Any], stream: IO[str] | None = None) -> None:
    out = stream if stream is not None else sys.stdout
    findings = [Finding.from_dict(f) for f in document["findings"]]
    partial = document.get("partial")
    print(t("TensorSight doctor: {0} finding(s)", len(findings)) + (t(" (PARTIAL)") if partial else ""), file=out)
    if partial:
        print(f"  {partial['message']}", file=out)
    for finding in findings:
        print("  " + format_finding(finding), file=out)
    if document.get("error"):
        print("  " + t("the script stopped with: {0}", document["error"]), file=out)
    for picture in document.get("pictures") or []:
        print("  " + t("picture of the first NaN/Inf: {0}", picture), file=out)
    shape_map = document.get("shapeMap")
    if shape_map and shape_map.get("rows"):
        from tensorsight.core.shapes import ShapeRow, format_shape_table

        rows = [ShapeRow(**row) for row in shape_map["rows"]]
        title = t("Shape map of {0} (first forward)", shape_map.get("model", t("the model")))
        print(file=out)
        print(format_shape_table(rows, title=title), file=out)
