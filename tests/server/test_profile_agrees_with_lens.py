"""One question, one answer: the time per step and the phase shares that "Profile Training" (``python -m tensorsight
profile --json``, a real subprocess) reports agree with what the training loop's code lens shows for a measured run
of the same script (the doctor reporting to the real language server's hub, as a Debug Training session does; the
lens title comes from the server over LSP).

The script (tests/programs/profiling/augmented_tabular.py) spends its data phase in many small Python calls, which
cProfile slows several times over while the model's tensor work runs at full speed: phases measured under the
profiler gave a step twice as long as the lens's, most of it data loading. Profile now takes its phase table from the
steps it runs without the profiler and says how much slower the profiled steps ran.

Tolerances: this machine's two cores are shared, so two runs of a 2 ms step differ by up to a third; the figures
must agree within 1.5× for ms/step and 12 points per phase share, and a pair of runs that does not is run once more
(the profiler's bias is systematic: it fails both times).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
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


def disagreement(profile: tuple[dict[str, float], float], lens: tuple[dict[str, float], float]) -> str | None:
    (profile_shares, profile_ms), (lens_shares, lens_ms) = profile, lens
    ratio = max(profile_ms, lens_ms) / max(1e-6, min(profile_ms, lens_ms))
    if ratio > STEP_RATIO:
        return f"ms/step: profile {profile_ms:.2f}, lens {lens_ms:.2f} ({ratio:.1f}×)"
    for name in PHASES:
        if abs(profile_shares[name] - lens_shares.get(name, 0.0)) > SHARE_POINTS:
            return f"{name}: profile {profile_shares[name]:.0f}%, lens {lens_shares.get(name, 0.0):.0f}%"
    return None


@pytest.mark.timeout(300)
async def test_profile_and_the_code_lens_give_one_time_per_step_and_one_breakdown(client: LanguageClient, monkeypatch):
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # both runs: one intra-op thread, as on a busy shared machine
        monkeypatch.setenv(name, "1")
    uri = await open_and_wait(client, SCRIPT)
    problems = []
    for attempt in range(2):
        profile_shares, profile_ms, document = await profile_figures()
        lens_shares, lens_ms, title = await lens_figures(client, uri, f"profile-vs-lens-{attempt}")
        problem = disagreement((profile_shares, profile_ms), (lens_shares, lens_ms))
        if problem is None:
            break
        problems.append(f"{problem} [profile {profile_shares}, lens {title!r}]")
    else:
        raise AssertionError("Profile and the code lens disagree:\n" + "\n".join(problems))

    # the figures Profile reports for the step are the unprofiled steps', and it says what the profiler cost
    assert document["phases"]["profiler_off"] is True and document["steps_timed"] == document["steps_profiled"] == 20
    assert document["ms_per_step"] == pytest.approx(profile_ms, rel=0.01)
    assert document["slowdown"] > 1.2, document["slowdown"]  # dozens of Python calls per item: the profiler shows
    assert document["profiled_ms_per_step"] > document["ms_per_step"]
    close(client, uri)
