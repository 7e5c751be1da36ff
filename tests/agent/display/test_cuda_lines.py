"""Summary lines of CUDA tensors and modules (runs where a GPU is present; skipped elsewhere): the line names the
device and the exact NaN/Inf counts, agrees with the line of the same values on the CPU, and a clean tensor's line
costs one device synchronisation (tests/support/cuda.py counts them with PyTorch's sync debug mode)."""

from __future__ import annotations

import torch
from torch import nn

from support.cuda import count_syncs, needs_cuda
from tensorsight.agent.display import presentation, reading

pytestmark = needs_cuda


def cold_line(value) -> str:
    reading.CACHE.clear()
    return presentation.summarize(value)


def values(rows: int = 1000, columns: int = 1000) -> torch.Tensor:
    return torch.randn(rows, columns, generator=torch.Generator().manual_seed(0))


def test_the_line_of_a_cuda_tensor_with_nan_names_the_device_and_the_counts():
    x = values()
    x[3, 4] = float("nan")
    x[5, 5] = float("inf")
    x[6, :2] = -float("inf")
    line = cold_line(x.cuda())
    assert line.startswith("f32[1000, 1000] cuda:0 ")
    assert "NaN×1" in line and "+Inf×1" in line and "-Inf×2" in line
    assert line.replace("cuda:0", "cpu") == cold_line(x)  # same figures, same words as the CPU's line


def test_a_clean_cuda_tensor_line_costs_one_sync():
    x = values(4096, 1024).cuda()
    syncs, line = count_syncs(lambda: cold_line(x))
    assert line.startswith("f32[4096, 1024] cuda:0 μ=")
    assert syncs == 1


def test_a_repeated_line_of_an_unchanged_cuda_tensor_costs_no_sync():
    x = values().cuda()
    reading.CACHE.clear()
    first = presentation.summarize(x)
    syncs, again = count_syncs(lambda: presentation.summarize(x))
    assert again == first and syncs == 0


def test_a_cuda_module_line_reports_a_nan_weight():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).cuda()
    model(torch.randn(8, 64, device="cuda")).sum().backward()
    clean = cold_line(model)
    assert "cuda:0" in clean and "NaN" not in clean
    with torch.no_grad():
        model[2].weight[0, 0] = float("nan")
    poisoned = cold_line(model)
    assert "cuda:0" in poisoned and "NaN" in poisoned, poisoned
