"""The long run that waits for its debugger: ``python -m tensorsight watch`` runs a 20,000-step training program with
no debugger, holds it at its first NaN (step 19,000) on the producing line, and a real DAP client attaches to it as
"Debug Training"'s attach entry does (``connect``, the agent's environment under ``tensorsightAgent``): the stop is on
that line in the frame that ran it, Variables show TensorSight's summaries and the ``(nonfinite)`` record, the
finding reaches the editor's real hub, and Continue runs the program to its end. Without an attach, the wait times
out: the report is written and the run goes on (or ends with status 3, ``--on-timeout exit``). The same attach works
from another working directory with ``pathMappings`` (the remote-tree case)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

import pytest

from support.dap_multi import MultiProcessSession, free_port
from support.paths import PROGRAMS, PYHELPERS, PYTHON, marked_lines
from support.running_hub import RunningHub
from tensorsight.core import protocol

pytestmark = pytest.mark.timeout(420)

LONG_RUN = os.path.join(PROGRAMS, "watch", "cosine_long_run.py")
NAN_LINE = marked_lines(LONG_RUN, "@nan")[""]
SLOW = 240.0


class WatchedRun:
    """``python -m tensorsight watch`` in a subprocess; its stderr is collected as it comes."""

    def __init__(self, script: str, *watch_args: str, cwd: str | None = None, script_args: tuple[str, ...] = ()):
        env = {**os.environ, "PYTHONPATH": PYHELPERS}
        command = [PYTHON, "-m", "tensorsight", "watch", *watch_args, script, *script_args]
        self.process = subprocess.Popen(
            command,
            cwd=cwd or os.path.dirname(script),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stdout_lines: list[str] = []
        self.stderr_lines: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, self.stdout_lines), daemon=True),
            threading.Thread(target=self._read, args=(self.process.stderr, self.stderr_lines), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream, lines: list[str]) -> None:
        for line in stream:
            lines.append(line)

    def wait_for_stderr(self, text: str, timeout: float = SLOW) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.stderr_lines):
                if text in line:
                    return line
            if self.process.poll() is not None and not any(text in line for line in self.stderr_lines):
                time.sleep(0.2)
                break
            time.sleep(0.1)
        raise AssertionError(f"{text!r} not on the watch's stderr:\n{''.join(self.stderr_lines)}")

    def finish(self, timeout: float = SLOW) -> int:
        code = self.process.wait(timeout)
        for reader in self._readers:
            reader.join(10)
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)


def agent_environment(hub: RunningHub) -> dict[str, str]:
    """What the extension puts under ``tensorsightAgent`` in its attach request."""
    options = {"viewTensorLink": "vscode://tensorsight.tensorsight/viewTensor?session=attach-1"}
    return {**hub.env(), protocol.ENV_OPTIONS: json.dumps(options), protocol.ENV_SESSION: "attach-1"}


@pytest.fixture
def hub():
    running = RunningHub("attach-1")
    yield running
    running.close()


def test_the_editor_attaches_to_a_run_waiting_at_its_first_nan(hub):
    port = free_port()
    run = WatchedRun(LONG_RUN, "--port", str(port), "--wait-timeout", "300")
    try:
        waiting = run.wait_for_stderr("waiting 300 s for a debugger on")
        assert f"cosine_long_run.py:{NAN_LINE} (step 19000)" in waiting and f'"port": {port}' in waiting
        assert "step 15000 loss" in "".join(run.stdout_lines)  # it ran unattended up to there
        with MultiProcessSession.attach(
            "127.0.0.1", port, timeout=SLOW, extra_attach={protocol.ATTACH_AGENT_KEY: agent_environment(hub)}
        ) as job:
            stop = job.root.wait_for_stop(timeout=SLOW)
            assert stop["reason"] == "exception" and stop["text"] == "NaN born here"
            assert "Tensor.div made 16 NaN" in stop["description"]
            assert (
                "View the tensor: vscode://tensorsight.tensorsight/viewTensor?session=attach-1&tensor=output"
                in (stop["description"])
            )
            frame = job.root.top_frame(stop)
            assert (frame["source"]["path"], frame["line"]) == (LONG_RUN, NAN_LINE)
            variables = job.root.locals(frame["id"])
            assert variables["x"]["value"].startswith("f32[2, 16]") or variables["x"]["value"].startswith("f32[32, 16]")
            assert "NaN born here" in variables["(nonfinite)"]["value"]
            paths = [f.get("source", {}).get("path", "") for f in job.root.stack(stop["threadId"])]
            assert not any(os.sep + "tensorsight" + os.sep in p for p in paths), paths
            deadline = time.monotonic() + 60
            while not hub.snapshot("finding") and time.monotonic() < deadline:
                time.sleep(0.1)
            (finding,) = [e["finding"] for e in hub.snapshot("finding") if e["finding"]["kind"] == "nonfinite"]
            assert (finding["file"], finding["line"], finding["step"]) == (LONG_RUN, NAN_LINE, 19000)
            job.root.continue_(stop["threadId"])
            job.root.wait_for_event("terminated", timeout=SLOW)  # an attached session ends; the exit code is the run's
            assert run.finish() == 0
        assert "trained 20000 steps" in "".join(run.stdout_lines)
    finally:
        run.kill()


def test_attach_with_path_mappings_to_a_run_started_in_another_tree(tmp_path):
    """The remote case on one machine: the run's files live in another folder (the remote tree); breakpoints and
    frames use the local paths through ``pathMappings``."""
    remote = tmp_path / "remote"
    remote.mkdir()
    remote_script = str(remote / os.path.basename(LONG_RUN))
    shutil.copy(LONG_RUN, remote_script)
    port = free_port()
    run = WatchedRun(
        remote_script, "--port", str(port), "--wait-timeout", "300", script_args=("--steps", "400", "--bad-step", "300")
    )
    try:
        run.wait_for_stderr("waiting 300 s for a debugger on")
        local_root = os.path.dirname(LONG_RUN)
        with MultiProcessSession.attach(
            "127.0.0.1", port, timeout=SLOW, path_mappings=[(local_root, str(remote))]
        ) as job:
            stop = job.root.wait_for_stop(timeout=SLOW)
            frame = job.root.top_frame(stop)
            assert (frame["source"]["path"], frame["line"]) == (LONG_RUN, NAN_LINE)
            job.root.continue_(stop["threadId"])
            job.root.wait_for_event("terminated", timeout=SLOW)  # an attached session ends; the exit code is the run's
            assert run.finish() == 0
    finally:
        run.kill()


@pytest.mark.parametrize("on_timeout, status", [("continue", 0), ("exit", 3)])
def test_nobody_attaches_the_report_is_written_and_the_run_goes_on_or_ends(on_timeout, status):
    port = free_port()
    args = ("--steps", "400", "--bad-step", "300")
    run = WatchedRun(LONG_RUN, "--port", str(port), "--wait-timeout", "2", "--on-timeout", on_timeout, script_args=args)
    try:
        assert run.finish() == status
        stderr = "".join(run.stderr_lines)
        assert "no debugger attached within 2 s" in stderr
        assert f"cosine_long_run.py:{NAN_LINE}: error [nonfinite] NaN born here" in stderr
        assert ("trained 400 steps" in "".join(run.stdout_lines)) == (on_timeout == "continue")
        assert "frozen modules" not in stderr
    finally:
        run.kill()


def test_a_port_in_use_is_said_and_the_run_goes_on():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        run = WatchedRun(LONG_RUN, "--port", str(port), script_args=("--steps", "400", "--bad-step", "300"))
        try:
            assert run.finish() == 0
            stderr = "".join(run.stderr_lines)
            assert f"cannot listen on 127.0.0.1:{port}" in stderr and "use --port to pick another" in stderr
            assert "trained 400 steps" in "".join(run.stdout_lines)
        finally:
            run.kill()


def test_a_misused_watch_says_what_to_fix():
    for args, message in (
        (["--port", "0", LONG_RUN], "--port expects a port number between 1 and 65535"),
        (["--wait-timeout", "-1", LONG_RUN], "--wait-timeout expects a positive number of seconds"),
        (["no_such_script.py"], "no such script: no_such_script.py"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "tensorsight", "watch", *args],
            env={**os.environ, "PYTHONPATH": PYHELPERS},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)


def test_a_clean_run_never_listens_nor_waits():
    port = free_port()
    run = WatchedRun(LONG_RUN, "--port", str(port), script_args=("--steps", "400", "--bad-step", "0"))
    try:
        assert run.finish() == 0
        stderr = "".join(run.stderr_lines)
        assert "waiting" not in stderr and "NaN" not in stderr and "0 finding(s)" in stderr, stderr
        assert "trained 400 steps" in "".join(run.stdout_lines)
    finally:
        run.kill()
