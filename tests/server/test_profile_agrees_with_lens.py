"""One question, one answer: the time per step and the phase shares that "Profile Training" (``python -m tensorsight
profile --json``, a real subprocess) reports agree with what the training loop's code lens shows for a measured run
of the same script (the doctor reporting to the real language server's hub, as a Debug Training session does; the
lens title comes from the server over LSP).

The script (tests/programs/profiling/augmented_tabular.py) spends its data phase in many small Python calls, which
cProfile slows several times over while the model's tensor work runs at full speed: phases measured under the
profiler gave a step twice as long as the lens's, most of it data loading. Profile now takes its phase table from the
steps it runs without the profiler and says how much slower the profiled steps ran.

Tolerances: this machine's two cores are shared with other work, so two runs a few seconds apart can differ
twofold (run side by side they would not be slowed alike either: one would be starting while the other measures).
Three pairs of runs are made, one after the other in alternating order; the median over the pairs of Profile's
ms/step over the lens's must lie within 1.5× and the median gap of each phase share within 12 points. The profiler's
bias is systematic (2 to 4× in ms/step here, data loading 15 to 25 points too large) and is in every pair; the
machine's noise is not.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from support.lsp import close, doctor_under_hub, initialize, open_and_wait, server_config
from support.paths import PYHELPERS, REPO, program

pytestmark = pytest.mark.asyncio(loop_scope="module")

SCRIPT = program("profiling/augmented_tabular.py")
PHASES = ("data", "forward", "backward", "optimizer", "other")
STEP_RATIO = 1.5
SHARE_POINTS = 12.0
PAIRS = 3
Figures = tuple[dict[str, float], float]  # (share of each phase in percent, ms per step)


@pytest_lsp.fixture(config=server_config(), scope="module")
async def client(lsp_client: LanguageClient):
    await initialize(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def profile_figures() -> tuple[dict[str, float], float, dict]:
    """Shares (percent) and ms/step of the Profile report's phase table, and the whole document."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORSIGHT_")}
    env["PYTHONPATH"] = PYHELPERS
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tensorsight", "profile", "--json", SCRIPT, cwd=REPO, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()[-3000:]
    document = json.loads(out)
    breakdown = {record["phase"]: record for record in document["phases"]["breakdown"]}
    shares = {name: float(breakdown[name]["percent"]) for name in PHASES}
    return shares, sum(float(breakdown[name]["ms_per_step"]) for name in PHASES), document


LENS = re.compile(r"TensorSight · (?P<phases>.+) — (?P<ms>[\d.]+) ms/step")


async def lens_figures(client: LanguageClient, uri: str, session: str) -> tuple[dict[str, float], float, str]:
    """Shares and ms/step of the code lens above the training loop after a measured run of the script."""
    options = {"measure": True, "observeShapes": True, "checkLeakage": True}
    await doctor_under_hub(client, session, SCRIPT, options, timeout=120)
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    titles = [lens.command.title for lens in lenses or [] if lens.command is not None]
    match = next((LENS.search(title) for title in titles if LENS.search(title)), None)
    assert match is not None, titles
    shares = {}
    for part in match["phases"].split(" · "):
        name, percent = part.rsplit(" ", 1)
        shares[name] = float(percent.rstrip("%"))
    return shares, float(match["ms"]), match.group(0)


def disagreement(profiles: list[Figures], lenses: list[Figures]) -> str | None:
    """Why the pairs of runs disagree (their median ratio of ms/step, their median gap in each share), or None."""
    ratio = statistics.median(profile[1] / max(1e-6, lens[1]) for profile, lens in zip(profiles, lenses, strict=True))
    if not 1 / STEP_RATIO <= ratio <= STEP_RATIO:
        return f"Profile's ms/step is {ratio:.2f}× the lens's (median of {len(profiles)} pairs of runs)"
    for name in PHASES:
        gap = statistics.median(
            profile[0][name] - lens[0].get(name, 0.0) for profile, lens in zip(profiles, lenses, strict=True)
        )
        if abs(gap) > SHARE_POINTS:
            return f"{name}: Profile's share is {gap:+.0f} points from the lens's (median of {len(profiles)} pairs)"
    return None


@pytest.mark.timing  # compares wall times of runs made one after the other: nothing may run beside it
@pytest.mark.timeout(300)
async def test_profile_and_the_code_lens_give_one_time_per_step_and_one_breakdown(client: LanguageClient, monkeypatch):
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # both runs: one intra-op thread, as on a busy shared machine
        monkeypatch.setenv(name, "1")
    uri = await open_and_wait(client, SCRIPT)
    profiles: list[Figures] = []
    lenses: list[Figures] = []
    documents: list[dict] = []
    seen: list[str] = []
    for pair in range(PAIRS):
        for run in ("profile", "lens") if pair % 2 == 0 else ("lens", "profile"):  # the machine's drift falls on both
            if run == "profile":
                shares, ms, document = await profile_figures()
                profiles.append((shares, ms))
                documents.append(document)
                seen.append(f"profile: {shares} — {ms:.2f} ms/step")
            else:
                shares, ms, title = await lens_figures(client, uri, f"profile-vs-lens-{pair}")
                lenses.append((shares, ms))
                seen.append(f"lens: {title}")
    problem = disagreement(profiles, lenses)
    assert problem is None, problem + "\n" + "\n".join(seen)
    document = documents[-1]

    # the figures Profile reports for the step are the unprofiled steps', and it says what the profiler cost
    assert document["phases"]["profiler_off"] is True and document["steps_timed"] == document["steps_profiled"] == 20
    assert document["ms_per_step"] == pytest.approx(
        sum(r["ms_per_step"] for r in document["phases"]["breakdown"]), 0.01
    )
    assert document["slowdown"] > 1.2, document["slowdown"]  # dozens of Python calls per item: the profiler shows
    assert document["profiled_ms_per_step"] > document["ms_per_step"]
    close(client, uri)
