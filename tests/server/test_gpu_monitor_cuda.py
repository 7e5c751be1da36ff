"""The server's GPU monitor on a real NVIDIA GPU (runs where one is present; skipped elsewhere): real NVML through
``nvidia-ml-py``, read while this process holds a known amount of device memory."""

from __future__ import annotations

import os

import pytest
import torch

from support.cuda import needs_cuda
from tensorsight.server.gpu_monitor import GpuMonitor

pytestmark = needs_cuda

GIB = 1024**3


def test_real_nvml_sees_the_gpu_and_the_memory_this_process_takes():
    monitor = GpuMonitor()
    before = monitor.snapshot(pids=[os.getpid()])
    assert before["available"] is True, before
    assert len(before["gpus"]) == torch.cuda.device_count()
    gpu = before["gpus"][0]
    assert gpu["name"] and gpu["memoryTotal"] == pytest.approx(
        torch.cuda.get_device_properties(0).total_memory, rel=0.05
    )
    assert 0 < gpu["memoryUsed"] <= gpu["memoryTotal"]  # this process's CUDA context already counts
    assert gpu["utilization"] is None or 0 <= gpu["utilization"] <= 100
    block = torch.empty(2 * GIB, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    after = monitor.snapshot(pids=[os.getpid()])["gpus"][0]
    assert after["memoryUsed"] - gpu["memoryUsed"] >= 2 * GIB * 0.9, (gpu, after)
    processes = monitor._nvml.nvmlDeviceGetComputeRunningProcesses
    listed = {p.pid for p in processes(monitor._nvml.nvmlDeviceGetHandleByIndex(0))}
    if os.getpid() in listed:  # NVML names processes by the host's pids: inside a container it may not list ours
        assert after["processMemoryUsed"] >= 2 * GIB
    del block
