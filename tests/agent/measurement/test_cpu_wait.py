"""The data-loading verdict on a machine that other work keeps busy (``measurement.runqueue``, ``core.phases``).

A loaded machine stretches a Python-heavy DataLoader more than the model, so on wall time a healthy loader can pass
half of the step. The phase clock reads the training thread's run-queue time (Linux schedstat) and the verdict judges
the program's own time. Checked here with contention made on purpose: the doctor pinned to one CPU with busy
processes pinned beside it, on a program whose loader is healthy (silent) and on one whose loader truly is the
bottleneck (still reported, with the time it waited for the CPU in its details).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from support.paths import PROGRAMS, PYHELPERS, PYTHON, REPO
from tensorsight.agent.measurement.runqueue import SCHEDSTAT, waited_seconds

pytestmark = pytest.mark.skipif(
    not os.path.exists(SCHEDSTAT) or not hasattr(os, "sched_setaffinity"), reason="needs Linux's per-thread schedstat"
)
BUSY = "while True: pass"
HEALTHY = os.path.join(PROGRAMS, "realistic", "bce_classifier", "bug_sigmoid_before_bce_with_logits.py")
# features computed per window in plain Python: about 90% of each step on an idle machine (10 of 11 ms)
DATA_BOUND = os.path.join(PROGRAMS, "profiling", "window_features.py")


def _one_cpu() -> int:
    return min(os.sched_getaffinity(0))


def _busy_beside(cpu: int, count: int) -> list[subprocess.Popen[bytes]]:
    def pin() -> None:
        os.sched_setaffinity(0, {cpu})

    return [subprocess.Popen([sys.executable, "-c", BUSY], preexec_fn=pin) for _ in range(count)]


def test_a_thread_that_shares_its_cpu_reads_the_time_it_waited():
    cpu, seen = _one_cpu(), {}

    def spin() -> None:
        os.sched_setaffinity(0, {cpu})  # this thread only
        start, began = waited_seconds(), time.monotonic()
        while time.monotonic() - began < 0.6:
            pass
        seen["waited"] = waited_seconds() - start

    hogs = _busy_beside(cpu, 2)
    try:
        time.sleep(0.2)
        worker = threading.Thread(target=spin)
        worker.start()
        worker.join()
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    # three runnable threads on one CPU: this one waited for most of its 0.6 s
    assert seen["waited"] > 0.2, seen
    alone = waited_seconds()
    assert waited_seconds() - alone < 0.05  # nothing beside it now


def _doctor_on_a_shared_cpu(script: str) -> dict:
    cpu = _one_cpu()
    env = {**os.environ, "PYTHONPATH": PYHELPERS, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    env.pop("TENSORSIGHT_OPTIONS", None)
    hogs = _busy_beside(cpu, 2)
    try:
        done = subprocess.run(
            [PYTHON, "-m", "tensorsight", "doctor", "--json", script],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=400,
            preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
        )
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert done.stdout.strip(), done.stderr[-3000:]
    return json.loads(done.stdout)


def test_on_a_shared_cpu_a_healthy_loader_gets_no_warning_and_a_slow_one_still_does():
    healthy = _doctor_on_a_shared_cpu(HEALTHY)
    assert [f for f in healthy["findings"] if f["kind"] == "performance"] == []
    slow = _doctor_on_a_shared_cpu(DATA_BOUND)
    (finding,) = [f for f in slow["findings"] if f["kind"] == "performance" and f["severity"] == "warning"]
    # two busy processes beside it: the training thread waited for the CPU for a good part of every step
    assert finding["details"]["cpu_wait_ms_per_step"] > finding["details"]["ms_per_step"]["data"]
    assert finding["details"]["shares"]["data"] > 0.5
