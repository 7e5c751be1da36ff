"""TensorSight under torchrun: a real two-process gloo DDP job on CPU (examples/ddp_nan.py), rank 1 with a bad record.

- Unit tier: the rank from torchrun's environment, the ``ranks`` option, and the watchdog's state bookkeeping.
- The debugger: a real ``python -m debugpy.adapter`` launches ``python -m torch.distributed.run`` with
  ``subProcess: true``; each worker becomes its own attached debug session (tests/support/dap_multi.py). Breakpoints
  limited to rank 1 stop rank 1 only; while it is held, rank 0 reports "waiting" in DDP's all-reduce, not "hung";
  then the sentinel stops rank 1 at the line that produces the NaN, naming the rank.
- The remote recipe: a job started under ``python -m debugpy --listen 127.0.0.1:PORT`` is attached with pathMappings,
  one session per worker.
- The doctor under torchrun: the ``nonfinite`` finding carries rank 1 and the producing line, and the events of both
  ranks reach the language server's real hub (``tensorsight.server.hub``) over loopback with the session token, where
  ``core.ranks`` names rank 1 as the rank whose loss went bad first.

Every wait is bounded and every process is killed in teardown: the machine is small and shared, so the timeouts are
generous, but nothing can hang the suite.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from support.dap import DapError
from support.dap_multi import MultiProcessSession
from support.paths import EXAMPLES, PYHELPERS, PYTHON, REPO, example, marked_lines
from support.running_hub import RunningHub
from tensorsight.agent.distributed import ranks as distributed
from tensorsight.agent.distributed.ranks import RankStateTracker, ThreadSample, sample_thread
from tensorsight.agent.runtime import identity, options
from tensorsight.agent.runtime.identity import RankInfo, rank_info_from_env
from tensorsight.core.ranks import classify_ranks, diverging_rank, latest_states, series_from_scalars

DDP_NAN = example("ddp_nan.py")
NAN_LINE = marked_lines(DDP_NAN, "@nan")[""]
ALLREDUCE_LINE = marked_lines(DDP_NAN, "@allreduce")[""]
TORCHRUN_LOOPBACK = [
    "--nproc-per-node",
    "2",
    "--rdzv-backend",
    "c10d",
    "--rdzv-endpoint",
    "127.0.0.1:0",
    "--local-addr",
    "127.0.0.1",
]
SLOW = 240.0  # seconds: three processes importing torch on two busy cores, under a debugger


@pytest.fixture
def hub():
    running = RunningHub()
    yield running
    running.close()


# ---- unit tier ------------------------------------------------------------------------------------------------------


def test_rank_comes_from_torchrun_environment():
    assert rank_info_from_env({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"}) == RankInfo(1, 2, 1, "env")
    assert rank_info_from_env({"RANK": "3"}) == RankInfo(3, 4, None, "env")
    assert rank_info_from_env({}) is None
    assert rank_info_from_env({"RANK": "-1", "WORLD_SIZE": "2"}) is None
    assert rank_info_from_env({"RANK": "one"}) is None


def test_ranks_option_limits_stops_to_chosen_ranks(monkeypatch, capsys):
    monkeypatch.setattr(identity, "_learned", None)  # whatever an earlier in-process run learned
    try:
        monkeypatch.setenv("RANK", "0")
        monkeypatch.setenv("WORLD_SIZE", "2")
        options.set_options({"ranks": [1]})
        assert distributed.chosen_ranks() == frozenset({1})
        assert identity.rank() == 0 and not distributed.stops_allowed()
        monkeypatch.setenv("RANK", "1")
        assert distributed.stops_allowed()
        options.set_options({"ranks": 1})
        assert distributed.stops_allowed() and distributed.chosen_ranks() == frozenset({1})
        options.set_options({})
        assert distributed.chosen_ranks() is None and distributed.stops_allowed()
        options.set_options({"ranks": ["1", True]})
        assert distributed.chosen_ranks() is None and distributed.stops_allowed()
        assert "ignoring launch option ranks=['1', True]: expected a list of rank numbers" in capsys.readouterr().err
    finally:
        options.set_options({})


def _sample(*, stopped: bool = False, key: tuple[int, int] | None = (1, 10), collective: str | None = None):
    return ThreadSample(stopped, key, collective, "/w/train.py", 63)


def test_tracker_waiting_needs_a_still_idle_collective_for_wait_after_seconds():
    tracker = RankStateTracker(wait_after=2.0, idle_cpu=0.5)
    in_backward = "torch.autograd.graph._engine_run_backward"
    assert tracker.update(_sample(collective=in_backward), step=4, now=100.0, cpu=10.0)  # first report
    assert tracker.state == "running"
    assert not tracker.update(_sample(collective=in_backward), step=4, now=101.0, cpu=10.1)
    assert tracker.update(_sample(collective=in_backward), step=4, now=102.5, cpu=10.2)
    assert (tracker.state, tracker.since) == ("waiting", 100.0)  # waiting since the thread stopped moving
    assert not tracker.update(_sample(collective=in_backward), step=4, now=110.0, cpu=10.3)
    # a step happened: it moved on
    assert tracker.update(_sample(collective=in_backward), step=5, now=111.0, cpu=10.4)
    assert (tracker.state, tracker.since) == ("running", 111.0)


def test_tracker_a_backward_that_computes_is_not_waiting():
    tracker = RankStateTracker(wait_after=2.0, idle_cpu=0.5)
    for second in range(6):  # same frame for 5 s, but the process burns a full core: a big backward, not a wait
        tracker.update(_sample(collective="torch.autograd.graph.x"), step=1, now=200.0 + second, cpu=float(second))
    assert tracker.state == "running"


def test_tracker_stopped_wins_and_outside_torch_is_never_waiting():
    tracker = RankStateTracker(wait_after=1.0)
    tracker.update(_sample(), step=1, now=0.0, cpu=0.0)
    assert tracker.update(_sample(stopped=True), step=1, now=0.5, cpu=0.0) and tracker.state == "stopped"
    assert tracker.update(_sample(key=(2, 3)), step=1, now=1.0, cpu=0.0) and tracker.state == "running"
    tracker.update(_sample(key=(2, 3)), step=1, now=9.0, cpu=0.0)  # still, idle, but not in torch: user code
    assert tracker.state == "running"


def _held_thread(source: str, filename: str, module: str, function: str):
    """A thread blocked (in a C call) inside ``function`` compiled as if it lived in ``filename`` / ``module``."""
    namespace: dict[str, object] = {"__name__": module}
    exec(compile(source, filename, "exec"), namespace)
    lock, entered = threading.Lock(), threading.Event()
    lock.acquire()

    def user_code() -> None:  # the "user's line" the sample should name
        namespace[function](lock, entered)  # type: ignore[operator]

    thread = threading.Thread(target=user_code, daemon=True)
    thread.start()
    assert entered.wait(10)
    time.sleep(0.05)
    return thread, lock


def test_sample_thread_sees_a_debugger_hold_and_a_collective():
    held, lock = _held_thread(
        "def _do_wait_suspend(lock, entered):\n    entered.set()\n    lock.acquire(timeout=20)\n",
        os.path.join(os.sep, "venv", "site-packages", "debugpy", "_vendored", "pydevd", "pydevd.py"),
        "pydevd",
        "_do_wait_suspend",
    )
    try:
        sample = sample_thread(sys._current_frames()[held.ident])
        assert sample.stopped and sample.collective is None
        assert sample.user_file == os.path.abspath(__file__)
    finally:
        lock.release()
        held.join(10)
    waiting, lock = _held_thread(
        "def barrier(lock, entered):\n    entered.set()\n    lock.acquire(timeout=20)\n",
        os.path.join(os.sep, "venv", "site-packages", "torch", "distributed", "distributed_c10d.py"),
        "torch.distributed.distributed_c10d",
        "barrier",
    )
    try:
        sample = sample_thread(sys._current_frames()[waiting.ident])
        assert not sample.stopped and sample.collective == "torch.distributed.distributed_c10d.barrier"
        assert sample.user_file == os.path.abspath(__file__)
    finally:
        lock.release()
        waiting.join(10)
    here = sample_thread(sys._getframe())
    assert not here.stopped and here.collective is None and here.user_line is not None


# ---- a real torchrun job under a real debugpy adapter ------------------------------------------------------------


@pytest.mark.timeout(900)
def test_debugger_follows_torchrun_workers_limits_breakpoints_and_reports_waiting_ranks(hub):
    breakpoints = [(DDP_NAN, ALLREDUCE_LINE, "step == 2")]
    job = MultiProcessSession.launch(
        module="torch.distributed.run",
        args=[*TORCHRUN_LOOPBACK, DDP_NAN],
        cwd=REPO,
        breakpoints=breakpoints,
        options={"breakOnNonFinite": True, "ranks": [1]},
        env=hub.env(),
        timeout=SLOW,
    )
    with job:
        workers = job.wait_for_workers(2, timeout=SLOW)
        assert len({w.pid for w in workers}) == 2
        rank0, rank1 = job.worker_with_env("RANK", "0"), job.worker_with_env("RANK", "1")

        # The breakpoint is limited to rank 1 (launch option ranks: [1]): rank 1 stops at step 2...
        stop = rank1.wait_for_stop(timeout=SLOW)
        frame = rank1.top_frame(stop)
        assert (frame["source"]["path"], frame["line"]) == (DDP_NAN, ALLREDUCE_LINE)
        frame_id = int(frame["id"])
        assert rank1.evaluate("step", frame_id)["result"] == "2"
        assert rank1.evaluate("tensorsight.rank()", frame_id)["result"] == "1"

        # ...rank 0 runs on into DDP's gradient all-reduce and waits there for rank 1: reported as waiting.
        job.wait_until(
            lambda: "[tensorsight] rank 0 is waiting in torch.autograd" in job.root.stdout(),
            timeout=SLOW,
            what="rank 0 to report that it waits in the all-reduce",
        )
        job.root.wait_for_output(f"ddp_nan.py:{ALLREDUCE_LINE}", timeout=SLOW)

        # The hub hears both ranks and, from their reports, tells "waiting for a stopped rank" from "hung".
        def hub_sees_rank_0_waiting_for_stopped_rank_1() -> bool:
            verdicts = classify_ranks(latest_states(hub.snapshot("rank-state")), time.time())
            return (
                verdicts.get(1) is not None
                and verdicts[1].verdict == "stopped"
                and verdicts.get(0) is not None
                and verdicts[0].verdict == "waiting"
                and verdicts[0].waiting_for == (1,)
            )

        job.wait_until(hub_sees_rank_0_waiting_for_stopped_rank_1, timeout=SLOW, what="the hub's verdicts")
        # ...and keeps telling it while rank 1 stays stopped: heartbeats still flow from the held process.
        reported = len(hub.snapshot("rank-state"))
        job.wait_until(
            lambda: any(e["rank"] == 1 for e in hub.snapshot("rank-state")[reported:]),
            timeout=60,
            what="a heartbeat from rank 1 while the debugger holds it",
        )
        assert hub_sees_rank_0_waiting_for_stopped_rank_1()
        states = latest_states(hub.snapshot("rank-state"))
        assert (states[1].file, states[1].line) == (DDP_NAN, ALLREDUCE_LINE)
        assert (states[0].file, states[0].line) == (DDP_NAN, ALLREDUCE_LINE)
        assert states[0].blocked_in == "torch.autograd.graph._engine_run_backward"
        assert {e["rank"] for e in hub.snapshot("rank")} == {0, 1}
        assert {e.get("rank") for e in hub.snapshot("hello")} >= {0, 1}
        job.root.wait_for_output("[tensorsight] rank 0: breakpoints are limited to ranks [1]")
        with pytest.raises(DapError):
            rank0.wait_for_event("stopped", timeout=1.0)

        # Released, rank 1 runs into the corrupt record at step 3: the sentinel stops it at the producing line.
        rank1.continue_(stop["threadId"])
        nan_stop = rank1.wait_for_stop(timeout=SLOW)
        nan_frame = rank1.top_frame(nan_stop)
        assert (nan_frame["source"]["path"], nan_frame["line"]) == (DDP_NAN, NAN_LINE)
        assert nan_stop["text"] == "NaN born here"
        assert "forward, at ddp_nan.py" in nan_stop["description"], nan_stop
        assert " (step 3, rank 1)" in nan_stop["description"], nan_stop  # fields, said once at the end
        job.wait_until(
            lambda: any(
                (e["finding"]["kind"], e["finding"].get("rank"), e["finding"]["line"]) == ("nonfinite", 1, NAN_LINE)
                for e in hub.snapshot("finding")
            ),
            timeout=60,
            what="rank 1's nonfinite finding at the hub",
        )
        with pytest.raises(DapError):
            rank0.wait_for_event("stopped", timeout=1.0)


@pytest.mark.timeout(600)
def test_attach_recipe_reaches_every_worker_of_a_job_started_elsewhere(tmp_path: Path):
    """The README's remote recipe, minus the SSH hop: `python -m debugpy --listen 127.0.0.1:PORT --wait-for-client`
    in front of torchrun on the "remote" side, an attach with pathMappings on ours, one session per worker."""
    checkout = tmp_path / "checkout"  # the editor's copy of the project; the job runs the "remote" examples/
    checkout.mkdir()
    local_file = str(checkout / "ddp_nan.py")
    shutil.copy(DDP_NAN, local_file)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (PYHELPERS, os.environ.get("PYTHONPATH")) if p)}
    command = [PYTHON, "-m", "debugpy", "--listen", f"127.0.0.1:{port}", "--wait-for-client"]
    command += ["-m", "torch.distributed.run", *TORCHRUN_LOOPBACK, DDP_NAN]
    with open(tmp_path / "remote.log", "wb") as log:
        remote = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        job = MultiProcessSession.attach(
            "127.0.0.1",
            port,
            path_mappings=[(str(checkout), EXAMPLES)],
            breakpoints=[(local_file, ALLREDUCE_LINE, "step == 1")],
            timeout=SLOW,
        )
        with job:
            job.wait_for_workers(2, timeout=SLOW)
            for rank in ("0", "1"):
                worker = job.worker_with_env("RANK", rank)
                frame = worker.top_frame(worker.wait_for_stop(timeout=SLOW))
                assert (frame["source"]["path"], frame["line"]) == (local_file, ALLREDUCE_LINE)
                assert worker.evaluate("tensorsight.rank()", int(frame["id"]))["result"] == rank
    finally:
        remote.kill()
        remote.wait(timeout=30)


# ---- the doctor under torchrun ------------------------------------------------------------------------------------


@pytest.mark.timeout(600)
def test_doctor_under_torchrun_reports_the_nan_with_its_rank_and_every_rank_reaches_the_hub(tmp_path: Path, hub):
    logs = tmp_path / "logs"
    pythonpath = os.pathsep.join(p for p in (PYHELPERS, os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": pythonpath, **hub.env()}
    command = [
        PYTHON,
        "-m",
        "torch.distributed.run",
        *TORCHRUN_LOOPBACK,
        "--log-dir",
        str(logs),
        "--redirects",
        "1",  # each rank's stdout (the doctor's JSON) to its own file
        "-m",
        "tensorsight",
        "doctor",
        "--json",
        DDP_NAN,
    ]
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        output, _ = process.communicate(timeout=SLOW)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)
    # Rank 1's report (the doctor's JSON on its stdout). torchrun ends the other rank as soon as one exits with an
    # error status, so rank 0's own report is read from the hub below rather than from its log.
    (report,) = logs.glob("**/attempt_0/1/stdout.log")
    document = json.loads(report.read_text())
    nonfinite = [f for f in document["findings"] if f["kind"] == "nonfinite"]
    assert nonfinite, (document, output.decode(errors="replace")[-3000:])
    first = nonfinite[0]
    assert (first["file"], first["line"], first.get("rank"), first.get("step")) == (DDP_NAN, NAN_LINE, 1, 3)
    assert all(f.get("rank") == 1 for f in document["findings"])

    # Both ranks reached the hub (token checked), each event carrying its rank...
    for event_type in ("hello", "rank", "rank-state", "scalars", "phases"):
        assert {e.get("rank") for e in hub.snapshot(event_type)} == {0, 1}, event_type
    assert not any("rejected" in line for line in hub.log), hub.log
    hub_nonfinite = [e["finding"] for e in hub.snapshot("finding") if e["finding"]["kind"] == "nonfinite"]
    assert any((f["rank"], f["line"], f["step"]) == (1, NAN_LINE, 3) for f in hub_nonfinite), hub_nonfinite
    assert all(e["finding"].get("rank") == e["rank"] for e in hub.snapshot("finding"))
    # ...and the hub's cross-rank view names the rank whose loss went bad first, at the training loop.
    loop = hub.snapshot("phases")[0]
    divergence = diverging_rank(
        series_from_scalars(hub.snapshot(), "loss"), "loss", file=loop["file"], line=loop["line"]
    )
    assert divergence is not None
    assert (divergence.kind, divergence.severity, divergence.rank, divergence.step) == ("dynamics", "error", 1, 3)
    assert diverging_rank(series_from_scalars(hub.snapshot(), "grad_norm"), "grad_norm", file="f", line=1) is None
