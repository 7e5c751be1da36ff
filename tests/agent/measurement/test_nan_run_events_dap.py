"""What the training panel gets from a run whose loss goes NaN and trains on (issue 28): a real Debug Training session
(debugpy, break on NaN/Inf armed) of tests/programs/hand_loss with ``--keep-going`` (a hand-written cross-entropy
whose torch.log makes -Inf around step 66; the script trains on, as many do), stopped at the first NaN and continued,
with the agent's events read from a loopback hub the way the language server reads them.

The panel showed no histogram after 120 steps (every tensor was NaN at step 100, and a histogram of no finite value
was not sent) and nothing before the NaN (the first histogram was due at step 100). Now: gradient norms for every
layer at every step, histograms at the first step, at the NaN step (the weights the optimizer was about to update,
still finite, and the gradients' NaN counts) and on schedule after it (the NaN counts, no buckets), and the NaN loss
step reported with the sentinel's origin at that step.
"""

from __future__ import annotations

import json
import math
import socket
import threading
import time

from support.dap import DebugSession
from support.paths import program

HAND_LOSS = program("hand_loss/train.py")
PARAMETERS = {"body.0.weight", "body.0.bias", "body.2.weight", "body.2.bias"}


class Hub:
    """A loopback listener that answers the agent's hello and keeps every event it sends."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self.events: list[dict] = []
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        conn, _ = self.sock.accept()
        stream = conn.makefile("rb")
        self.events.append(json.loads(stream.readline()))
        conn.sendall((json.dumps({"type": "welcome", "sessionId": "nan-run"}) + "\n").encode())
        for raw in stream:
            self.events.append(json.loads(raw))

    def wait_for_bye(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(e["type"] == "bye" for e in self.events):
            assert time.monotonic() < deadline, "the agent never said bye"
            time.sleep(0.05)


def test_a_run_that_goes_nan_still_sends_grad_norms_histograms_and_the_nan_step():
    hub = Hub()
    env = {"TENSORSIGHT_HUB": hub.address, "TENSORSIGHT_TOKEN": "t"}
    options = {"breakOnNonFinite": True}
    with DebugSession.launch(HAND_LOSS, args=["--keep-going"], options=options, env=env, timeout=90) as session:
        stop = session.wait_for_stop(timeout=180)
        assert stop["text"] == "Inf born here"
        session.continue_(stop["threadId"])
        assert session.wait_for_exit(timeout=120) == 0
    hub.wait_for_bye()
    events = hub.events

    scalars = {e["step"]: e["values"] for e in events if e["type"] == "scalars" and e["split"] == "train"}
    assert sorted(scalars) == list(range(1, 121)), "a scalars event for each of the 120 steps"
    nan_step = min(step for step, values in scalars.items() if not math.isfinite(values["loss"]))
    assert 10 < nan_step < 100
    (origin,) = [e for e in events if e["type"] == "nonfinite"]
    assert origin["step"] == nan_step and origin["op"] == "torch.log"

    for step, values in scalars.items():  # a gradient norm for every layer, every step: finite before the NaN
        norms = [values[f"grad_norm/{name}"] for name in PARAMETERS] + [values["grad_norm"]]
        assert all(math.isfinite(v) and v > 0 for v in norms) == (step < nan_step), (step, norms)

    histograms: dict[int, dict[tuple[str, str], dict]] = {}
    for e in events:
        if e["type"] == "histogram":
            histograms.setdefault(e["step"], {})[(e["name"], e["kind"])] = e
    assert sorted(histograms) == [1, nan_step, 100]
    everything = {(name, kind) for name in PARAMETERS for kind in ("weight", "grad")}
    for step, taken in histograms.items():
        assert set(taken) == everything, step
        for histogram in taken.values():
            counts, edges = histogram["counts"], histogram["edges"]
            assert len(edges) == (len(counts) + 1 if counts else 0)
            assert set(histogram["nonfinite"]) == {"nan", "posinf", "neginf"}
    before = histograms[1].values()
    assert all(sum(h["counts"]) > 0 and sum(h["nonfinite"].values()) == 0 for h in before)
    at_nan = histograms[nan_step]
    # taken before the optimizer applied the NaN gradients: the weights are still finite, the gradients are not
    assert all(
        sum(h["nonfinite"].values()) == 0 and sum(h["counts"]) > 0 for (_, k), h in at_nan.items() if k == "weight"
    )
    assert all(h["nonfinite"]["nan"] > 0 for (_, k), h in at_nan.items() if k == "grad")
    after = histograms[100].values()  # every value NaN by then: no bucket, the NaN count
    assert all(h["counts"] == [] and h["nonfinite"]["nan"] > 0 for h in after)
