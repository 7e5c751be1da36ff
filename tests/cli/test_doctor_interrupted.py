"""The doctor stopped from outside: SIGTERM (what the editor sends when its user cancels Run Doctor), Ctrl+C and
``--timeout`` each give the partial report of what ran, in text and ``--json``, with the exit status a shell expects;
where the script was is printed on stderr as a traceback that ends in the user's own file, never in ours.

The training is written the way users write it (argparse, ``main()``, the loop in a trainer module) and runs as a real
``python -m tensorsight doctor`` subprocess."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from support.paths import PYHELPERS, PYTHON

TRAINER = """\
import sys

import torch


class Trainer:
    def __init__(self, model, lr):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=lr)

    def fit(self, x, y, epochs):
        for epoch in range(epochs):
            self.optimizer.zero_grad()
            loss = (self.model(x) - y).pow(2).mean()
            loss.backward()
            self.optimizer.step()
            if epoch == 0:
                print("training started", file=sys.stderr, flush=True)
"""

SCRIPT = """\
import argparse

import torch

from trainer import Trainer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10**9)
    args = parser.parse_args()
    torch.manual_seed(0)
    x, y = torch.randn(64, 8), torch.randn(64)  # y lacks the trailing dim: silent broadcasting
    Trainer(torch.nn.Linear(8, 1), lr=0.01).fit(x, y, args.epochs)


if __name__ == "__main__":
    main()
"""

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def project(tmp_path):
    (tmp_path / "trainer.py").write_text(TRAINER)
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    return script


def start(tmp_path, *args: str) -> subprocess.Popen[str]:
    script = project(tmp_path)
    return subprocess.Popen(
        [PYTHON, "-m", "tensorsight", "doctor", *args, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": PYHELPERS, "TENSORSIGHT_LOCALE": "en"},
        # a child of a shell job inherits SIGINT ignored; the user's terminal does not
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def interrupt_when_training(proc: subprocess.Popen[str], sig: int) -> tuple[str, str]:
    """Wait for the script's first step (its print on stderr), let it train a little, then send ``sig``."""
    assert proc.stderr is not None
    seen = ""
    deadline = time.monotonic() + 120
    while "training started" not in seen:
        line = proc.stderr.readline()
        assert line and time.monotonic() < deadline, seen
        seen += line
    time.sleep(1.0)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return out, seen + err


def last_frame(stderr: str) -> tuple[str, int]:
    frames = re.findall(r'File "([^"]+)", line (\d+)', stderr)
    assert frames, stderr
    return os.path.basename(frames[-1][0]), int(frames[-1][1])


def assert_stopped_in_user_code(stderr: str, heading: str) -> None:
    assert heading in stderr, stderr
    where = stderr[stderr.index(heading) :]
    assert "tensorsight" not in where and "script_runner" not in where, where
    assert where.splitlines()[1].strip().startswith('File "') and "train.py" in where.splitlines()[1]
    assert last_frame(where) in {("trainer.py", n) for n in range(12, 19)}, where


def test_sigterm_gives_the_partial_json_report_and_exit_status_143(tmp_path):
    proc = start(tmp_path, "--json")
    out, err = interrupt_when_training(proc, signal.SIGTERM)
    assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
    document = json.loads(out)
    partial = document["partial"]
    assert partial["reason"] == "interrupted" and partial["signal"] == "SIGTERM" and partial["steps"] >= 1
    assert "interrupted (SIGTERM)" in partial["message"]
    assert "error" not in document
    kinds = {(f["kind"], os.path.basename(f["file"])) for f in document["findings"]}
    assert ("shape", "trainer.py") in kinds, document["findings"]
    assert_stopped_in_user_code(err, "the script was interrupted (SIGTERM) here")


def test_ctrl_c_gives_the_same_partial_text_report_and_exit_status_130(tmp_path):
    proc = start(tmp_path)
    out, err = interrupt_when_training(proc, signal.SIGINT)
    assert proc.returncode == 128 + signal.SIGINT, err[-3000:]
    assert "(PARTIAL)" in out and "interrupted (SIGINT)" in out
    assert "[shape]" in out and "the script stopped with" not in out
    assert_stopped_in_user_code(err, "the script was interrupted (Ctrl+C) here")


def test_a_timeout_prints_where_the_script_was_ending_in_the_users_file(tmp_path):
    project(tmp_path)
    proc = subprocess.run(
        [PYTHON, "-m", "tensorsight", "doctor", "--json", "--timeout", "20", "train.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": PYHELPERS, "TENSORSIGHT_LOCALE": "en"},
        timeout=120,
    )
    document = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr[-3000:]  # warnings only: a timeout is a limit the user set
    assert document["partial"]["reason"] == "timeout"
    assert_stopped_in_user_code(proc.stderr, "the script was stopped by --timeout here")


def test_a_script_that_ignores_sigterm_is_reported_and_ended_within_the_grace(tmp_path):
    script = tmp_path / "stubborn.py"
    script.write_text(
        "import time\nimport sys; print('training started', file=sys.stderr, flush=True)\n"
        "while True:\n    try:\n        time.sleep(3600)\n    except BaseException:\n        pass\n"
    )
    proc = subprocess.Popen(
        [PYTHON, "-m", "tensorsight", "doctor", "--json", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": PYHELPERS},
    )
    out, err = interrupt_when_training(proc, signal.SIGTERM)
    document = json.loads(out)
    assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
    assert document["partial"]["reason"] == "interrupted" and "did not stop" in document["error"]
