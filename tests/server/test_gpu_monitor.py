"""GPU monitor: a fake NVML at the one seam (the constructor, or a ``pynvml`` module first on the server's path) for
the GPU side, and the real ``pynvml`` for the "no NVIDIA GPU" state on machines without one.
"""

from __future__ import annotations

import asyncio
import json
import pathlib
import textwrap

import pytest
from pytest_lsp import LanguageClient

from support.lsp import eventually, initialize, server_config
from tensorsight.server.gpu_monitor import GpuMonitor

GIB = 1024**3

FAKE_PYNVML = textwrap.dedent(
    """
    '''A stand-in for nvidia-ml-py's pynvml: two GPUs, per-process memory for pid 4242, no utilisation on GPU 1.'''
    from types import SimpleNamespace

    class NVMLError(Exception):
        pass

    calls = {"init": 0}

    def nvmlInit():
        calls["init"] += 1

    def nvmlShutdown():
        pass

    def nvmlDeviceGetCount():
        return 2

    def nvmlDeviceGetHandleByIndex(index):
        return ("handle", index)

    def nvmlDeviceGetName(handle):
        return b"NVIDIA H100 80GB HBM3" if handle[1] == 0 else "NVIDIA A10"

    def nvmlDeviceGetUtilizationRates(handle):
        if handle[1] == 1:
            raise NVMLError("Not Supported")
        return SimpleNamespace(gpu=37, memory=12)

    def nvmlDeviceGetMemoryInfo(handle):
        return SimpleNamespace(used=(handle[1] + 2) * 1024**3, total=80 * 1024**3, free=0)

    def nvmlDeviceGetComputeRunningProcesses(handle):
        if handle[1] == 1:
            return []
        return [SimpleNamespace(pid=4242, usedGpuMemory=512 * 1024**2), SimpleNamespace(pid=1, usedGpuMemory=GIB)]

    def nvmlDeviceGetGraphicsRunningProcesses(handle):
        return [SimpleNamespace(pid=4242, usedGpuMemory=None)]

    GIB = 1024**3
    """
)


def fake_nvml(tmp_path: pathlib.Path):
    import importlib.util

    path = tmp_path / "fake_pynvml.py"
    path.write_text(FAKE_PYNVML)
    spec = importlib.util.spec_from_file_location("fake_pynvml", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gpus_and_the_debugged_process_usage(tmp_path):
    nvml = fake_nvml(tmp_path)
    monitor = GpuMonitor(nvml=nvml)
    snapshot = monitor.snapshot(pids=[4242])
    assert snapshot == {
        "available": True,
        "gpus": [
            {
                "index": 0,
                "name": "NVIDIA H100 80GB HBM3",
                "utilization": 37,
                "memoryUsed": 2 * GIB,
                "memoryTotal": 80 * GIB,
                "processMemoryUsed": 512 * 1024**2,
            },
            {"index": 1, "name": "NVIDIA A10", "utilization": None, "memoryUsed": 3 * GIB, "memoryTotal": 80 * GIB},
        ],
    }
    assert "processMemoryUsed" not in monitor.snapshot(pids=[])["gpus"][0]
    assert nvml.calls["init"] == 1  # one NVML session, not one per poll


def test_nvml_that_cannot_start_is_a_clean_no_gpu_state(tmp_path):
    nvml = fake_nvml(tmp_path)

    def broken_init():
        nvml.calls["init"] += 1
        raise nvml.NVMLError("Driver Not Loaded")

    nvml.nvmlInit = broken_init
    monitor = GpuMonitor(nvml=nvml)
    first = monitor.snapshot()
    assert first == {"available": False, "gpus": [], "message": "no NVIDIA GPU (Driver Not Loaded)"}
    assert monitor.snapshot() == first
    assert nvml.calls["init"] == 1  # not retried every second


def test_missing_package_and_zero_gpus(tmp_path):
    def no_package():
        raise ImportError("No module named 'pynvml'")

    assert GpuMonitor(loader=no_package).snapshot()["message"].endswith("(pynvml) is not installed")
    nvml = fake_nvml(tmp_path)
    nvml.nvmlDeviceGetCount = lambda: 0
    assert GpuMonitor(nvml=nvml).snapshot() == {"available": False, "gpus": [], "message": "no NVIDIA GPU found"}


def test_real_pynvml_on_this_machine():
    """Where there is no NVIDIA GPU (the CI machines), real NVML gives the clean state; on a GPU machine, real data."""
    snapshot = GpuMonitor().snapshot()
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        assert snapshot["available"] is True and snapshot["gpus"][0]["memoryTotal"] > 0
    else:
        assert snapshot["available"] is False and snapshot["gpus"] == []
        assert snapshot["message"].startswith("no NVIDIA GPU")


@pytest.mark.asyncio(loop_scope="function")
async def test_server_reports_no_gpu_at_start():
    config = server_config()
    client = await config.start()
    try:
        await initialize(client)  # type: ignore[arg-type]
        report = await eventually(lambda: client.gpu_reports, what="tensorsight/gpu")  # type: ignore[attr-defined]
        torch = pytest.importorskip("torch")
        if not torch.cuda.is_available():
            assert report[0]["available"] is False and report[0]["message"].startswith("no NVIDIA GPU")
        await client.shutdown_session()  # type: ignore[attr-defined]
    finally:
        await client.stop()


@pytest.fixture(scope="module")
def fake_module_dir(tmp_path_factory) -> pathlib.Path:
    directory = tmp_path_factory.mktemp("fake_nvml")
    (directory / "pynvml.py").write_text(FAKE_PYNVML)
    return directory


@pytest.mark.asyncio(loop_scope="function")
async def test_server_polls_the_gpu_while_a_session_runs(fake_module_dir):
    config = server_config(bundled_libs=str(fake_module_dir))
    client: LanguageClient = await config.start()  # type: ignore[assignment]
    try:
        await initialize(client)
        session = await client.protocol.send_request_async("tensorsight/startSession", {"sessionId": "gpu"})
        host, port = session.address.rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write((json.dumps({"type": "hello", "token": session.token, "pid": 4242}) + "\n").encode())
        await writer.drain()
        await reader.readline()

        def with_process_memory():
            return [r for r in client.gpu_reports if r["gpus"] and "processMemoryUsed" in r["gpus"][0]]  # type: ignore[attr-defined]

        reports = await eventually(with_process_memory, what="a GPU report with the debugged process's memory")
        gpu = reports[-1]["gpus"][0]
        assert reports[-1]["available"] is True and gpu["name"] == "NVIDIA H100 80GB HBM3"
        assert gpu["processMemoryUsed"] == 512 * 1024**2 and gpu["utilization"] == 37
        count = len(client.gpu_reports)  # type: ignore[attr-defined]
        await eventually(lambda: len(client.gpu_reports) >= count + 2, what="polling about once a second")  # type: ignore[attr-defined]
        await client.protocol.send_request_async("tensorsight/endSession", {"sessionId": "gpu"})
        await asyncio.sleep(2.5)
        stopped = len(client.gpu_reports)  # type: ignore[attr-defined]
        await asyncio.sleep(2.0)
        assert len(client.gpu_reports) == stopped  # no polling without a session  # type: ignore[attr-defined]
        writer.close()
        await client.shutdown_session()
    finally:
        await client.stop()
