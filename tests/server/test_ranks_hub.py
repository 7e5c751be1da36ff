"""Distributed runs in the runtime hub: per-rank heartbeats become verdicts (running, stopped, waiting for a stopped
rank, hung, silent), per-rank scalars a finding naming the diverging rank; first in the pure view, then through the
real server over stdio with two raw hub connections playing rank 0 and rank 1.
"""

from __future__ import annotations

import asyncio
import json
import math
import pathlib
import time
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from support.lsp import eventually, initialize, server_config
from tensorsight.server.rank_book import COMPARE_STEPS, MAX_RANK_STEPS, MAX_RANKS
from tensorsight.server.runtime_view import RuntimeView, normalize_path

FILE = "/project/train.py"
LOOP_LINE = 20
T0 = 1_000_000.0  # epoch seconds of the synthetic run


def hello(pid: int, rank: int | None) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "hello", "pid": pid, "script": FILE, "time": T0}
    if rank is not None:
        event["rank"] = rank
    return event


def rank_state(rank: int, state: str, at: float, **extra: Any) -> dict[str, Any]:
    return {
        "type": "rank-state",
        "pid": 100 + rank,
        "rank": rank,
        "world_size": 2,
        "state": state,
        "since": extra.pop("since", at),
        "heartbeat": extra.pop("heartbeat", 5.0),
        "step": extra.pop("step", 3),
        "time": at,
        **extra,
    }


def scalars(rank: int | None, step: int, loss: float, **extra: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "scalars",
        "pid": 100 + (rank or 0),
        "step": step,
        "split": "train",
        "values": {"loss": loss, "lr": 0.1},
        "time": T0 + step,
        **extra,
    }
    if rank is not None:
        event["rank"] = rank
    return event


def two_ranks(view: RuntimeView | None = None) -> RuntimeView:
    view = view or RuntimeView()
    view.start_session("s")
    view.apply("s", hello(100, 0))
    view.apply("s", hello(101, 1))
    return view


def verdicts_by_rank(verdicts: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {v["rank"]: v for v in verdicts}


# ---- pure view ------------------------------------------------------------------------------------------------------


def test_a_rank_waiting_for_a_stopped_rank_is_waiting_not_hung():
    view = two_ranks(RuntimeView(hang_after=10.0))
    update = view.apply("s", rank_state(1, "stopped", T0 + 55.0, since=T0, file=FILE, line=31))
    assert update.error is None and update.ranks
    view.apply(
        "s", rank_state(0, "waiting", T0 + 55.0, since=T0, file=FILE, line=27, blocked_in="torch.autograd.backward")
    )
    check = view.check_ranks("s", T0 + 60.0)  # far past hang_after, but rank 1 is held by the debugger
    assert check.changed and check.status and not check.findings
    by_rank = verdicts_by_rank(check.verdicts)
    assert by_rank[1]["verdict"] == "stopped" and by_rank[1]["line"] == 31
    assert by_rank[0]["verdict"] == "waiting" and by_rank[0]["waiting_for"] == [1]
    assert "for rank 1, which is stopped in the debugger" in by_rank[0]["message"]
    assert by_rank[0]["blocked_in"] == "torch.autograd.backward"
    (detail,) = view.status()["details"]
    assert detail["ranks"] == check.verdicts
    again = view.check_ranks("s", T0 + 60.0)
    assert not again.changed and not again.status and again.verdicts == check.verdicts


def test_a_hang_becomes_one_finding_at_the_waiting_line():
    view = two_ranks(RuntimeView(hang_after=10.0))
    view.apply("s", rank_state(1, "running", T0 + 19.0))
    view.apply("s", rank_state(0, "waiting", T0 + 19.0, since=T0, file=FILE, line=27, blocked_in="torch.distributed"))
    early = view.check_ranks("s", T0 + 5.0)
    assert verdicts_by_rank(early.verdicts)[0]["verdict"] == "waiting" and not early.findings
    hung = view.check_ranks("s", T0 + 20.0)
    assert hung.status and verdicts_by_rank(hung.verdicts)[0]["verdict"] == "hung"
    (finding,) = hung.findings
    assert (finding.kind, finding.severity, finding.rank, finding.line) == ("performance", "error", 0, 27)
    assert finding.details["code"] == "rank-hung" and "looks hung" in finding.message
    assert hung.diagnostics == {normalize_path(FILE)} and view.diagnostics(FILE) == [finding]
    assert not view.check_ranks("s", T0 + 21.0).findings  # one finding per waiting episode, not one per second


def test_a_quiet_rank_turns_silent_and_a_finished_one_finished():
    view = two_ranks()
    view.apply("s", rank_state(0, "running", T0, heartbeat=1.0))
    view.apply("s", rank_state(1, "running", T0, heartbeat=1.0))
    assert {v["verdict"] for v in view.check_ranks("s", T0 + 1.0).verdicts} == {"running"}
    view.apply("s", {"type": "bye", "pid": 101, "dropped": 0})
    check = view.check_ranks("s", T0 + 10.0)
    by_rank = verdicts_by_rank(check.verdicts)
    assert by_rank[0]["verdict"] == "silent" and "no report for 10 s" in by_rank[0]["message"]
    assert by_rank[1]["verdict"] == "finished"


def test_a_diverging_loss_names_its_rank_once():
    view = two_ranks()
    view.apply("s", {"type": "phases", "pid": 100, "step": 1, "seconds": {"forward": 0.01}, "file": FILE, "line": 20})
    found = []
    for step in range(1, 15):
        for rank in (0, 1):
            loss = 0.5 * (1 + 0.1 * math.sin(step))
            if rank == 1 and step >= 9:
                loss = 5.0 + step  # rank 1 drifts to ~10x while rank 0 stays
            assert view.apply("s", scalars(rank, step, loss)).ranks
            found += view.check_ranks("s", T0 + step).findings  # as the server does after each scalars event
    (finding,) = found
    assert (finding.kind, finding.severity, finding.rank, finding.line) == ("dynamics", "warning", 1, LOOP_LINE)
    assert finding.message.startswith("loss on this rank diverges from the other ranks")
    assert finding.details["code"] == "rank-divergence" and finding.details["metric"] == "loss"
    (diagnostic,) = view.diagnostics(FILE)
    assert diagnostic.rank == 1 and diagnostic.details["reason"] == "drift"


def test_nan_on_one_rank_is_an_error_naming_it_even_without_ranks_in_the_events():
    view = RuntimeView()
    view.start_session("s")
    view.apply("s", hello(100, 0))
    view.apply("s", hello(101, None))
    view.apply("s", {"type": "rank", "pid": 101, "rank": 1, "world_size": 2})  # learnt from torch.distributed
    for step in range(1, 6):
        view.apply("s", scalars(None, step, 0.5, pid=100))
        view.apply("s", scalars(None, step, float("nan") if step == 4 else 0.5, pid=101))
        view.apply("s", scalars(None, step, 99.0, pid=101, split="val"))  # validation: not compared
    (finding,) = view.check_ranks("s", T0).findings
    assert (finding.severity, finding.rank, finding.step, finding.line) == ("error", 1, 4, 1)  # no loop seen: line 1
    assert finding.message.startswith("loss became NaN on this rank")


def test_a_slow_drift_is_measured_against_the_start_of_the_run():
    """Rank 1's loss creeps up from step 600, never 3x within any few hundred steps, but 3x the others' by ~1000."""
    view = two_ranks()
    found = []
    for step in range(1, 1400):
        creep = 1.0 + max(0, step - 600) / 200.0
        for rank in (0, 1):
            view.apply("s", scalars(rank, step, 0.5 * (creep if rank == 1 else 1.0)))
            found += view.check_ranks("s", T0 + step).findings
    (finding,) = found
    assert finding.rank == 1 and finding.details["reason"] == "drift"
    assert 900 <= finding.step <= 1100, finding.step  # long after the first steps left a last-256-steps window


def test_per_rank_memory_is_bounded():
    view = two_ranks()
    for step in range(3 * MAX_RANK_STEPS):
        for rank in (0, 1):
            view.apply("s", scalars(rank, step, 0.5, values={"loss": 0.5, "grad_norm": 1.0}))
    book = view.sessions["s"].ranks
    last = 3 * MAX_RANK_STEPS - 1
    for metric in ("loss", "grad_norm"):
        for rank in (0, 1):
            kept = sorted(book.series[metric][rank])
            assert len(kept) == MAX_RANK_STEPS
            assert kept[:COMPARE_STEPS] == list(range(COMPARE_STEPS))  # the run's start, what drift is measured against
            assert kept[COMPARE_STEPS:] == list(range(last - MAX_RANK_STEPS + COMPARE_STEPS + 1, last + 1))  # newest
    for rank in range(MAX_RANKS + 50):
        view.apply("s", rank_state(rank, "running", T0))
    assert len(book.states) == MAX_RANKS


def test_malformed_rank_reports_are_rejected_and_change_nothing():
    view = two_ranks()
    for bad in (
        rank_state(0, "dancing", T0),
        {**rank_state(0, "running", T0), "time": "noon"},
        {**rank_state(0, "running", T0), "rank": -1},
        {"type": "rank-state", "pid": 999, "state": "running", "time": T0},  # no rank, unknown process
    ):
        assert view.apply("s", bad).error is not None, bad
    assert view.sessions["s"].ranks.states == {}
    ignored = view.apply("s", scalars(0, 1, 0.5, values={"loss": "high", "grad_norm": True}))
    assert ignored.error is None and not ignored.ranks  # the panel still gets it; nothing to compare
    assert view.check_ranks("s", T0).verdicts == []


# ---- the real server over stdio -------------------------------------------------------------------------------------


async def rank_connection(address: str, token: str, rank: int, script: str) -> asyncio.StreamWriter:
    """A raw hub client (the agent's wire protocol) that says it is ``rank``."""
    host, port = address.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    first = {"type": "hello", "protocol": 1, "token": token, "pid": 7000 + rank, "rank": rank, "script": script}
    writer.write((json.dumps(first) + "\n").encode())
    await writer.drain()
    assert json.loads(await asyncio.wait_for(reader.readline(), 30))["type"] == "welcome"
    return writer


async def send(writer: asyncio.StreamWriter, rank: int, event_type: str, **data: Any) -> None:
    event = {"type": event_type, "pid": 7000 + rank, "rank": rank, "time": time.time(), **data}
    writer.write((json.dumps(event) + "\n").encode())
    await writer.drain()


def rank_events(client: LanguageClient, session_id: str, event_type: str) -> list[dict[str, Any]]:
    return [
        e["event"]
        for e in client.run_events  # type: ignore[attr-defined]
        if e["sessionId"] == session_id and e["event"]["type"] == event_type
    ]


def latest_verdicts(client: LanguageClient, session_id: str) -> dict[int, dict[str, Any]]:
    reports = rank_events(client, session_id, "ranks")
    return verdicts_by_rank(reports[-1]["verdicts"]) if reports else {}


async def stop_server(client: LanguageClient) -> None:
    """shutdown + exit, or a kill after 10 s: a failing test must not wait for the server forever."""
    try:
        await asyncio.wait_for(client.shutdown_session(), 10)  # type: ignore[attr-defined]
    except (asyncio.TimeoutError, RuntimeError):
        pass
    process = getattr(client, "_server", None)
    if process is not None and process.returncode is None:
        process.kill()
    await asyncio.wait_for(client.stop(), 10)


def training_loop_script(directory: pathlib.Path) -> pathlib.Path:
    script = directory / "train_ddp.py"
    script.write_text("import torch\n" + "\n" * 18 + "for step in range(100):  # training loop\n    pass\n")
    return script


@pytest.mark.timeout(120)
@pytest.mark.asyncio(loop_scope="function")
async def test_two_ranks_through_the_real_server(tmp_path):
    script = str(training_loop_script(tmp_path))
    uri = pathlib.Path(script).as_uri()
    client: LanguageClient = await server_config().start()  # type: ignore[assignment]
    writers: list[asyncio.StreamWriter] = []
    try:
        await initialize(client)
        session = await client.protocol.send_request_async("tensorsight/startSession", {"sessionId": "ddp"})
        writers = [await rank_connection(session.address, session.token, r, script) for r in (0, 1)]
        rank0, rank1 = writers

        async def report(writer: asyncio.StreamWriter, rank: int, state: str, **extra: Any) -> None:
            extra = {"since": time.time(), "heartbeat": 5.0, "step": 3, "file": script, "line": 21, **extra}
            await send(writer, rank, "rank-state", world_size=2, state=state, **extra)

        def verdict_of(rank: int) -> str | None:
            return latest_verdicts(client, "ddp").get(rank, {}).get("verdict")

        # rank 1 stops at a breakpoint; rank 0 blocks in DDP's all-reduce: waiting for rank 1, not hung
        await report(rank1, 1, "stopped")
        await report(rank0, 0, "waiting", blocked_in="torch.autograd.backward")
        await eventually(lambda: verdict_of(0) == "waiting", 30, "a ranks runEvent with rank 0 waiting")
        verdicts = latest_verdicts(client, "ddp")
        assert verdicts[1]["verdict"] == "stopped"
        expected = "waiting in torch.autograd.backward at train_ddp.py:21 for rank 1, which is stopped"
        assert expected in verdicts[0]["message"]
        await eventually(
            lambda: [d for d in client.statuses[-1]["details"] if d["sessionId"] == "ddp" and len(d["ranks"]) == 2],  # type: ignore[attr-defined]
            30,
            "the verdicts in tensorsight/status",
        )

        # both ranks train; rank 1's loss drifts to ~10x the other's, and its grad norm is NaN at step 12 (sent as
        # the agent's json.dumps writes it: a bare NaN)
        for step in range(1, 15):
            for rank, writer in ((0, rank0), (1, rank1)):
                loss = 0.5 * (1 + 0.1 * math.sin(step)) if rank == 0 or step < 9 else 5.0 + step
                grad_norm = float("nan") if rank == 1 and step == 12 else 1.0
                seconds = {"forward": 0.01, "backward": 0.02}
                await send(writer, rank, "phases", step=step, seconds=seconds, file=script, line=LOOP_LINE)
                values = {"loss": loss, "grad_norm": grad_norm, "lr": 0.1}
                await send(writer, rank, "scalars", step=step, split="train", values=values)

        def divergence_findings() -> dict[str, dict[str, Any]]:
            found = [e for e in rank_events(client, "ddp", "finding") if e["finding"]["kind"] == "dynamics"]
            return {e["finding"]["details"]["metric"]: e for e in found} if len(found) == 2 else {}

        found = await eventually(divergence_findings, 30, "finding runEvents for the diverging rank")
        assert {e["rank"] for e in found.values()} == {1} and {e["finding"]["rank"] for e in found.values()} == {1}
        assert found["loss"]["finding"]["message"].startswith("loss on this rank diverges")
        assert found["grad_norm"]["finding"]["message"].startswith("grad_norm became NaN on this rank")
        assert found["grad_norm"]["finding"]["step"] == 12

        def run_diagnostics() -> list[types.Diagnostic]:
            return [d for d in client.diagnostics.get(uri, []) if d.source == "TensorSight (run)"]

        await eventually(lambda: len(run_diagnostics()) == 2, 30, "the runtime diagnostics for the diverging rank")
        diagnostics = run_diagnostics()
        assert {(d.range.start.line + 1, d.code) for d in diagnostics} == {(LOOP_LINE, "rank-divergence")}
        severities = {d.severity for d in diagnostics}
        assert severities == {types.DiagnosticSeverity.Warning, types.DiagnosticSeverity.Error}
        assert all("rank 1" in d.message for d in diagnostics)

        # rank 1 goes quiet (short heartbeat, then nothing) while rank 0 keeps waiting: rank 0 is hung
        await report(rank1, 1, "running", heartbeat=0.4, step=14)
        waiting_since = time.time()

        async def rank0_heartbeats() -> None:
            while True:
                await report(rank0, 0, "waiting", since=waiting_since, heartbeat=0.4, step=14, blocked_in="all_reduce")
                await asyncio.sleep(0.2)

        beating = asyncio.ensure_future(rank0_heartbeats())
        try:
            await eventually(lambda: verdict_of(0) == "hung", 30, "rank 0 hung")
            assert verdict_of(1) == "silent"
            hang = await eventually(
                lambda: [e for e in rank_events(client, "ddp", "finding") if e["finding"]["kind"] == "performance"],
                30,
                "the hang finding",
            )
            assert hang[0]["rank"] == 0 and "rank 1, which stopped reporting" in hang[0]["finding"]["message"]
            assert hang[0]["finding"]["line"] == 21
        finally:
            beating.cancel()

        # nobody reports any more: only the server's timer can notice that rank 0 fell silent too
        await eventually(lambda: verdict_of(0) == "silent", 30, "rank 0 silent, seen by the timer")
        assert await client.protocol.send_request_async("tensorsight/endSession", {"sessionId": "ddp"})
    finally:
        for writer in writers:
            writer.close()
        await stop_server(client)
