"""View Tensor on a CUDA tensor (runs where a GPU is present; skipped elsewhere): the payload is computed on the
device and agrees with the CPU's for the same values, NaN cells survive pooling, the tensor is left as it was, and
the device is synchronised only to read the answers back (a bounded number of times)."""

from __future__ import annotations

import torch

from support.cuda import count_syncs, needs_cuda
from tensorsight.agent.display import reading
from tensorsight.agent.display.viewer import NAN, view

pytestmark = needs_cuda


def values(rows: int = 2000, columns: int = 3000) -> torch.Tensor:
    x = torch.randn(rows, columns, generator=torch.Generator().manual_seed(0))
    x[1234, 2345] = float("nan")
    x[5, 5] = float("inf")
    return x


def test_a_cuda_heatmap_agrees_with_the_cpu_and_keeps_its_nan_cell() -> None:
    x = values()
    on_gpu = x.cuda()
    version = on_gpu._version
    reading.CACHE.clear()
    gpu = view(on_gpu)
    cpu = view(x)
    assert gpu["meta"]["device"].startswith("cuda") and on_gpu._version == version
    assert gpu["counts"] == cpu["counts"] and gpu["counts"]["nan"] == 1
    assert gpu["heatmap"]["marks"] == cpu["heatmap"]["marks"]
    heat = gpu["heatmap"]
    assert heat["marks"][1234 // heat["blockRows"]][2345 // heat["blockCols"]] == NAN


def test_a_large_cuda_line_and_image_batch_within_bounded_syncs() -> None:
    line = torch.randn(50_000_000, device="cuda")
    line[123] = float("nan")
    reading.CACHE.clear()
    syncs, payload = count_syncs(lambda: view(line))
    assert payload["kind"] == "line" and payload["counts"]["nan"] == 1 and payload["histogram"]["sampled"]
    assert syncs <= 16
    batch = view(torch.rand(32, 3, 64, 64, device="cuda"))
    assert batch["kind"] == "image" and batch["image"]["shown"] == 16
