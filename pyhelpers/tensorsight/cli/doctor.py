"""Headless doctor: run a training script with the agent armed (no debugger), add the static rules, print findings.

``python -m tensorsight doctor [--json] [--set KEY=JSON ...] script.py [args...]``

The script runs in this process as ``__main__`` (like ``python script.py``) with the same agent hooks a debug
session gets; its own output goes to stderr when ``--json`` is asked, so stdout stays one JSON document. Exit status:
0 when no finding is an error, 1 when one is or the script failed (an exception, a syntax error, a non-zero
exit), 2 when the doctor itself was misused (no such script, a bad ``--set``). Besides findings, the
report carries the shape map of the model's first forward pass (``shapeMap`` in ``--json``).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import sys
from typing import Any

from tensorsight.core import protocol
from tensorsight.core.findings import Finding, findings_document, format_finding

# Launch options the doctor arms by default: everything that observes without stopping.
DOCTOR_OPTIONS: dict[str, Any] = {
    "breakOnNonFinite": True,
    "measure": True,
    "observeShapes": True,
    "checkLeakage": True,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document {findings: [...]}")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="override a launch option, e.g. --set measure=false",
    )
    parser.add_argument("--no-run", action="store_true", help="static rules only; do not execute the script")
    parser.add_argument("script", help="the training script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """``["a=1", "b=true", "c=text"]`` -> ``{"a": 1, "b": True, "c": "text"}``; raises ValueError on a bad pair or
    on a key that is not a launch option (``core.protocol.LAUNCH_OPTIONS``): a typo would otherwise do nothing."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--set expects KEY=VALUE, got {pair!r}")
        if key not in protocol.OPTIONS_BY_NAME:
            close = difflib.get_close_matches(key, list(protocol.OPTIONS_BY_NAME), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ValueError(f"--set {key}: no such launch option{hint}")
        try:
            out[key] = json.loads(raw)
        except ValueError:
            out[key] = raw
    return out


def static_findings(path: str) -> list[Finding]:
    """Findings of the static rules on the script's source (none when the rules are not shipped)."""
    try:
        from tensorsight.core import rules  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return []
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    return list(rules.analyze(source, os.path.abspath(path)))


class RunReport:
    """What one doctored run produced besides findings: the model's shape map (first forward), if any."""

    def __init__(self) -> None:
        self.shape_map: dict[str, Any] | None = None


def run_script(
    path: str, args: list[str], options: dict[str, Any], quiet_stdout: bool, report: RunReport | None = None
) -> tuple[list[Finding], str]:
    """Run ``path`` under the agent; returns (runtime findings, error text or "")."""
    from tensorsight.agent.runtime import events, install
    from tensorsight.agent.runtime import excepthook as exceptions
    from tensorsight.agent.runtime import options as agent_options
    from tensorsight.cli import script_runner

    agent_options.set_options(options)
    collected: list[Finding] = []
    error = ""

    def collect(event: dict[str, Any]) -> None:
        if event.get("type") == "finding":
            collected.append(Finding.from_dict(event["finding"]))
        elif event.get("type") == "shape-map" and report is not None and report.shape_map is None:
            report.shape_map = {k: v for k, v in event.items() if k not in ("type", "pid", "time")}

    unsubscribe = events.subscribe(collect)
    install.install("doctor")
    redirect = contextlib.redirect_stdout(sys.stderr) if quiet_stdout else contextlib.nullcontext()
    try:
        with redirect:
            outcome = script_runner.run_script(path, args)
        if outcome.exception is not None:
            collected.extend(exceptions.explain(outcome.exception))
        error = outcome.error
    finally:
        events.emit("run-finished", error=error)
        unsubscribe()
    return collected, error


def run(args: argparse.Namespace) -> int:
    path = args.script
    if not os.path.isfile(path):
        print(f"tensorsight doctor: no such script: {path}", file=sys.stderr)
        return 2
    try:
        options = {**DOCTOR_OPTIONS, **parse_overrides(args.set)}
    except ValueError as exc:
        print(f"tensorsight doctor: {exc}", file=sys.stderr)
        return 2
    findings = static_findings(path)
    error = ""
    report = RunReport()
    if not args.no_run:
        runtime, error = run_script(path, list(args.args), options, quiet_stdout=args.json, report=report)
        findings.extend(runtime)
    document = findings_document(findings)
    if report.shape_map is not None:
        document["shapeMap"] = report.shape_map
    if error:
        document["error"] = error
    if args.json:
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        print_report(document)
    severities = {f["severity"] for f in document["findings"]}
    return 1 if "error" in severities or error else 0


def print_report(document: dict[str, Any]) -> None:
    findings = [Finding.from_dict(f) for f in document["findings"]]
    print(f"TensorSight doctor: {len(findings)} finding(s)")
    for finding in findings:
        print("  " + format_finding(finding))
    if document.get("error"):
        print(f"  the script stopped with: {document['error']}")
    shape_map = document.get("shapeMap")
    if shape_map and shape_map.get("rows"):
        from tensorsight.core.shapes import ShapeRow, format_shape_table

        rows = [ShapeRow(**row) for row in shape_map["rows"]]
        print()
        print(format_shape_table(rows, title=f"Shape map of {shape_map.get('model', 'the model')} (first forward)"))
