"""A real ipykernel driven through jupyter_client, the way JupyterLab and VS Code notebooks debug a cell.

``Kernel.start(python)`` launches ``python -m ipykernel_launcher`` (the user's environment, no PYTHONPATH unless
``extra_env`` sets one) and connects a blocking client. ``debug(command, arguments)`` sends a Debug Adapter
Protocol request as a Jupyter ``debug_request`` on the control channel and returns the DAP response;
``wait_for_debug_event`` reads the ``debug_event`` messages the kernel publishes on IOPub (``stopped``...).
``execute`` runs a cell and returns its reply and output; ``submit`` sends a cell without waiting (for a cell that
will stop at a breakpoint).
"""

from __future__ import annotations

import itertools
import json
import queue
import time
from pathlib import Path
from typing import Any

from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from .user_envs import clean_env

TIMEOUT = 60.0


class Kernel:
    def __init__(self, manager: KernelManager, client: BlockingKernelClient) -> None:
        self.manager = manager
        self.client = client
        self._seq = itertools.count(1)
        self._iopub: list[dict[str, Any]] = []

    @classmethod
    def start(cls, python: str, workdir: Path, extra_env: dict[str, str] | None = None) -> Kernel:
        spec_dir = workdir / "kernels" / "tensorsight-test"
        spec_dir.mkdir(parents=True, exist_ok=True)
        argv = [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        (spec_dir / "kernel.json").write_text(json.dumps({"argv": argv, "language": "python", "display_name": "t"}))
        manager = KernelManager(
            kernel_name="tensorsight-test",
            kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(workdir / "kernels")]),
            connection_file=str(workdir / "connection.json"),
        )
        # IPYTHONDIR: a profile of its own, so a developer's startup files cannot change what the kernel does
        env = clean_env(IPYTHONDIR=str(workdir / "ipython"), **(extra_env or {}))
        manager.start_kernel(env=env, cwd=str(workdir))
        client = manager.blocking_client()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=TIMEOUT)
        except BaseException:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
            raise
        return cls(manager, client)

    # ---- shell ----------------------------------------------------------------------------------------------------

    def submit(self, code: str) -> str:
        return str(self.client.execute(code))

    def execute(self, code: str, timeout: float = TIMEOUT) -> tuple[dict[str, Any], str]:
        """Run a cell; returns (execute_reply content, everything it wrote to stdout/stderr)."""
        return self.finish(self.submit(code), timeout)

    def finish(self, msg_id: str, timeout: float = TIMEOUT) -> tuple[dict[str, Any], str]:
        """Wait for the reply of a submitted cell and collect its output."""
        reply = self.client.get_shell_msg(timeout=timeout)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.client.get_shell_msg(timeout=timeout)
        self._drain_iopub(until_idle_of=msg_id, timeout=timeout)
        text = "".join(
            m["content"].get("text", "")
            for m in self._iopub
            if m["msg_type"] == "stream" and m["parent_header"].get("msg_id") == msg_id
        )
        return reply["content"], text

    # ---- control: the Jupyter debug protocol ----------------------------------------------------------------------

    def debug(self, command: str, arguments: dict[str, Any] | None = None, timeout: float = TIMEOUT) -> dict[str, Any]:
        """One DAP request through the control channel; raises unless the kernel answers ``success: true``."""
        content = {"seq": next(self._seq), "type": "request", "command": command, "arguments": arguments or {}}
        message = self.client.session.msg("debug_request", content)
        self.client.control_channel.send(message)
        deadline = time.monotonic() + timeout
        while True:
            reply = self.client.get_control_msg(timeout=max(0.1, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == message["header"]["msg_id"]:
                break
        response = reply["content"]
        if not response.get("success"):
            raise AssertionError(f"debug_request {command} failed: {response}")
        return dict(response)

    def wait_for_debug_event(self, name: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            events = [m for m in self._iopub if m["msg_type"] == "debug_event"]
            for message in events[seen:]:
                if message["content"].get("event") == name:
                    self._iopub.remove(message)
                    return dict(message["content"])
            seen = len(events)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no {name!r} debug_event within {timeout}s")
            self._read_iopub(min(remaining, 1.0))

    def _read_iopub(self, timeout: float) -> bool:
        try:
            self._iopub.append(self.client.get_iopub_msg(timeout=timeout))
        except queue.Empty:
            return False
        return True

    def _drain_iopub(self, until_idle_of: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not any(
            m["msg_type"] == "status"
            and m["content"].get("execution_state") == "idle"
            and m["parent_header"].get("msg_id") == until_idle_of
            for m in self._iopub
        ):
            if time.monotonic() > deadline:
                raise AssertionError("the kernel did not go idle after the cell")
            self._read_iopub(1.0)

    def close(self) -> None:
        try:
            self.client.stop_channels()
        finally:
            self.manager.shutdown_kernel(now=True)

    def __enter__(self) -> Kernel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
