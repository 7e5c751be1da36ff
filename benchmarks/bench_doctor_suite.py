"""Benchmark: the doctor over the realistic suite (tests/programs/realistic/): precision, recall, false alarms on the
clean scripts, and the doctor's overhead against a plain run. Prints one table and the totals.

    .venv/bin/python benchmarks/bench_doctor_suite.py [--suite realistic|heldout] [--json] [--workers 2]
        [--timeout 120] [--no-plain] [NAME...]

``--suite heldout`` measures tests/programs/heldout/ instead (programs written apart from the checks, same layout and
markers; see tests/support/realistic.py).

NAME selects scripts by their ``family/file.py`` id or a prefix of it (``gcn``, ``tabular/bug_``). Per script: the
markers found and missed, the false alarms (warning and error findings that match no ``# BUG:`` marker), and the
wall time of ``python script.py`` and of ``doctor --json`` (run back to back in one of ``--workers`` workers, so the
two runs of a script see about the same load). Totals:

- recall: markers found / markers, in all and per kind (a marker counts under the sorted ``/``-joined kinds it
  accepts, e.g. ``memory/training-logic``);
- precision: warning and error findings that match a marker / all warning and error findings (several findings may
  match one marker, e.g. ``memory`` and ``training-logic`` on one ``total_loss += loss``);
- false alarms on clean scripts: how many clean scripts get any, and how many findings that is;
- crashes: scripts that fail or give no report under the doctor;
- overhead: median (and range) of doctor time / plain time, interpreter and torch import included in both;
- printed results: the scripts whose printed losses (``loss: <number>`` lines) differ between the doctored and the
  plain run (the doctor must leave the training as it was).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "pyhelpers"))

from support import realistic  # noqa: E402


def selected(names: list[str], suite: str = realistic.DEFAULT_SUITE) -> list[realistic.Script]:
    scripts = realistic.discover(realistic.suite_root(suite))
    if not names:
        return scripts
    return [s for s in scripts if any(s.name == n or s.name.startswith(n) for n in names)]


def measure(args: argparse.Namespace) -> dict[str, Any]:
    scripts = selected(args.names, args.suite)

    def both(script: realistic.Script) -> tuple[realistic.Run, realistic.Run | None]:
        # back to back in one worker, so that the two runs of a script see the same load on a shared machine
        baseline = None if args.no_plain else realistic.run_plain(script, args.timeout)
        return realistic.run_doctor(script, args.timeout), baseline

    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        pairs = {pair[0].script.name: pair for pair in pool.map(both, scripts)}
    doctored = {name: pair[0] for name, pair in pairs.items()}
    plain = {name: pair[1] for name, pair in pairs.items() if pair[1] is not None}
    rows = []
    for script in scripts:
        run = doctored[script.name]
        result = realistic.score(run)
        alerts = realistic.counted((run.document or {}).get("findings", []))
        baseline = plain.get(script.name)
        rows.append(
            {
                "script": script.name,
                "clean": script.clean,
                "markers": [m.where() for m in script.markers],
                "marker_kinds": {m.where(): marker_kind(m) for m in script.markers},
                "found": [m.where() for m in result.found],
                "missed": [m.where() for m in result.missed],
                "matching_alerts": len(alerts) - len(result.false_alarms),
                "false_alarms": [realistic.describe_finding(f) for f in result.false_alarms],
                "error": result.error,
                "doctor_s": round(run.seconds, 2),
                "plain_s": round(baseline.seconds, 2) if baseline else None,
                "plain_error": baseline.problem if baseline else "",
                "same_losses": same_losses(run, baseline) if baseline and not baseline.problem else None,
            }
        )
    return {"rows": rows, "totals": totals(rows)}


def same_losses(doctored: realistic.Run, plain: realistic.Run) -> bool:
    """Whether the doctored run printed the same losses as the plain run, value for value (``losses_printed``: the
    program's ``loss: <number>`` lines), i.e. whether the doctor left the training as it was."""
    doctor_losses, plain_losses = realistic.losses_printed(doctored.output), realistic.losses_printed(plain.output)
    return len(doctor_losses) == len(plain_losses) and all(
        a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(doctor_losses, plain_losses, strict=True)
    )


def marker_kind(marker: realistic.Marker) -> str:
    """The label a marker's recall is counted under: the kinds that find it, sorted and joined."""
    return "/".join(sorted(marker.kinds))


def recall_by_kind(rows: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per marker kind: how many markers there are and how many the doctor found."""
    by_kind: dict[str, dict[str, int]] = {}
    for row in rows:
        found = set(row["found"])
        for where, kind in row["marker_kinds"].items():
            tally = by_kind.setdefault(kind, {"markers": 0, "found": 0})
            tally["markers"] += 1
            tally["found"] += where in found
    return dict(sorted(by_kind.items()))


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    markers = sum(len(r["markers"]) for r in rows)
    found = sum(len(r["found"]) for r in rows)
    matching = sum(r["matching_alerts"] for r in rows)
    false_alarms = sum(len(r["false_alarms"]) for r in rows)
    clean = [r for r in rows if r["clean"]]
    ratios = [r["doctor_s"] / r["plain_s"] for r in rows if r["plain_s"] and not r["plain_error"]]
    return {
        "scripts": len(rows),
        "clean_scripts": len(clean),
        "markers": markers,
        "found": found,
        "recall": found / markers if markers else None,
        "recall_by_kind": recall_by_kind(rows),
        "precision": matching / (matching + false_alarms) if matching + false_alarms else None,
        "false_alarms": false_alarms,
        "clean_scripts_with_false_alarms": sum(1 for r in clean if r["false_alarms"]),
        "false_alarms_on_clean_scripts": sum(len(r["false_alarms"]) for r in clean),
        "crashes": [r["script"] for r in rows if r["error"]],
        "losses_compared": sum(1 for r in rows if r["same_losses"] is not None),
        "losses_changed": [r["script"] for r in rows if r["same_losses"] is False],
        "overhead_median": statistics.median(ratios) if ratios else None,
        "overhead_min": min(ratios) if ratios else None,
        "overhead_max": max(ratios) if ratios else None,
    }


def _ratio(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_table(report: dict[str, Any]) -> None:
    header = f"{'script':<50} {'found':>5} {'missed':>6} {'false':>5} {'doctor s':>8} {'plain s':>7} {'ratio':>6}"
    print(header)
    print("-" * len(header))
    for row in report["rows"]:
        ratio = row["doctor_s"] / row["plain_s"] if row["plain_s"] else None
        print(
            f"{row['script']:<50} {len(row['found']):>5} {len(row['missed']):>6} {len(row['false_alarms']):>5} "
            f"{row['doctor_s']:>8.1f} {_ratio(row['plain_s'], 1):>7} {_ratio(ratio):>6}"
        )
        for where in row["missed"]:
            print(f"    missed      {where}")
        for alarm in row["false_alarms"]:
            print(f"    false alarm {alarm}")
        if row["error"]:
            print(f"    error       {row['error'][-200:]}")
    t = report["totals"]
    print()
    print(f"suite {t['suite']}: scripts {t['scripts']} ({t['clean_scripts']} clean), markers {t['markers']}")
    print(f"recall    {t['found']}/{t['markers']} = {_ratio(t['recall'])}")
    for kind, tally in t["recall_by_kind"].items():
        print(f"  {kind:<40} {tally['found']}/{tally['markers']}")
    print(f"precision {_ratio(t['precision'])} ({t['false_alarms']} false alarms in all)")
    print(
        f"false alarms on clean scripts: {t['clean_scripts_with_false_alarms']} of {t['clean_scripts']} scripts, "
        f"{t['false_alarms_on_clean_scripts']} findings"
    )
    print(f"crashes under the doctor: {len(t['crashes'])} {t['crashes'] or ''}")
    if t["losses_compared"]:
        changed = t["losses_changed"]
        same = t["losses_compared"] - len(changed)
        print(
            f"printed losses as in the plain run: {same} of {t['losses_compared']} scripts"
            + (f" {changed}" * bool(changed))
        )
    print(
        f"overhead (doctor / plain wall time): median {_ratio(t['overhead_median'])}x "
        f"({_ratio(t['overhead_min'])}-{_ratio(t['overhead_max'])}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--suite",
        choices=sorted(realistic.SUITES),
        default=realistic.DEFAULT_SUITE,
        help="which suite of tests/programs/ to measure (default: %(default)s)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document {rows, totals}")
    parser.add_argument("--workers", type=int, default=realistic.DEFAULT_WORKERS)
    parser.add_argument("--timeout", type=float, default=realistic.DEFAULT_TIMEOUT, help="seconds per run")
    parser.add_argument("--no-plain", action="store_true", help="skip the plain runs (no overhead figures)")
    parser.add_argument("names", nargs="*", help="family/file.py ids or prefixes (default: the whole suite)")
    args = parser.parse_args()
    report = measure(args)
    report["totals"]["suite"] = args.suite
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        print()
    else:
        print_table(report)


if __name__ == "__main__":
    main()
