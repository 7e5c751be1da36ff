"""How the statistics read a torch tensor's memory: with no ``__torch_function__`` running (``plain_tensors``),
expanded (stride-0) dimensions read once (``unexpand``), dense data as one flat view in any dimension order
(``flat_view``), a deterministic strided sample past the budget (``sample_view``), and everything else as bounded
1-D chunks in a dtype the reductions handle well (``torch_chunks``). Views where the layout allows, copies of one
chunk at most otherwise; never a write to the tensor.

Called by ``torch_kernel`` and ``dispatch`` of this package, by ``cache`` (``plain_tensors`` around its key), and by
the agent's display (``reading``, ``viewer``), which reads tensors under ``plain_tensors`` too.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from tensorsight.core.stats.figures import dim_steps, sample_step


def plain_tensors(torch: Any) -> Any:
    """Run torch ops with no ``__torch_function__`` at all: a user subclass's never runs inside the debugger, and no
    ``TorchFunctionMode`` on the stack (the program's, or our own shape observers') sees our reads. Modes matter for
    speed too: with one on the stack every tensor attribute read (``.grad``, ``._version``) calls into Python,
    which made a scan of 10,000 parameters 30× slower under the debugger."""
    disable = getattr(torch._C, "DisableTorchFunction", None) or getattr(torch._C, "DisableTorchFunctionSubclass", None)
    return disable() if disable is not None else contextlib.nullcontext()


SPARSE_COMPRESSED = ("sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc")


def compressed_layouts(torch: Any) -> tuple[Any, ...]:
    return tuple(getattr(torch, name) for name in SPARSE_COMPRESSED if hasattr(torch, name))


def why_no_data(torch: Any, t: Any) -> str | None:
    """Tensors that carry metadata but no readable values (tracing and transforms), said plainly."""
    fake = getattr(sys.modules.get("torch._subclasses.fake_tensor"), "FakeTensor", None)
    if isinstance(fake, type) and isinstance(t, fake):
        return "fake tensor: shape only, no data"
    functorch = getattr(torch._C, "_functorch", None)
    is_batched = getattr(functorch, "is_batchedtensor", None)
    if is_batched is not None and is_batched(t):
        return "vmap batched tensor: values are per example, not computed"
    return None


def torch_kind(torch: Any, t: Any) -> str:
    if t.is_quantized:
        return "float"
    if t.dtype == torch.bool:
        return "bool"
    if t.is_complex():
        return "complex"
    if t.is_floating_point():
        return "float"
    return "int"


def unexpand(t: Any) -> tuple[Any, int]:
    """Drop the repeats of expanded (stride-0) dimensions: the same values, read once, and how many times each."""
    repeats = 1
    base = t
    for dim in range(t.dim()):
        if t.stride(dim) == 0 and t.shape[dim] > 1:
            base = base.narrow(dim, 0, 1)
            repeats *= int(t.shape[dim])
    return base, repeats


def flat_view(t: Any) -> Any | None:
    """A flat view of a dense tensor (any dimension order, e.g. transposed or channels-last), or None."""
    if t.is_contiguous():
        return t.view(-1)
    order = sorted(range(t.dim()), key=lambda d: (-t.stride(d), -t.shape[d]))
    permuted = t.permute(order)
    return permuted.view(-1) if permuted.is_contiguous() else None


def sample_view(torch: Any, t: Any, target: int) -> Any:
    """A deterministic strided view of about ``target`` elements (no RNG, no copy)."""
    flat = flat_view(t)
    if flat is not None:
        last = int(t.shape[-1]) if t.dim() else 1
        return flat[:: sample_step(flat.numel(), target, last)]
    index = tuple(slice(None, None, step) for step in dim_steps(tuple(t.shape), target))
    return t[index]


def torch_chunks(torch: Any, t: Any, chunk: int, dequantize: bool) -> Iterator[Any]:
    """1-D contiguous pieces of ``t`` of at most ``chunk`` elements, in a dtype the reductions handle well.

    Views where the layout allows; otherwise copies of one chunk at most. Half precision becomes float32, small
    complex becomes complex64, quantized values are dequantized, one chunk at a time.
    """
    for block in _blocks(t, chunk):
        if dequantize:
            block = block.dequantize()
        flat = block.contiguous().view(-1)
        if flat.is_floating_point() and flat.element_size() < 4:
            flat = flat.float()
        elif flat.is_complex() and flat.element_size() < 8:
            flat = flat.to(torch.complex64)
        yield flat


def _blocks(t: Any, chunk: int) -> Iterator[Any]:
    flat = None if t.is_quantized else flat_view(t)
    if flat is not None:
        for start in range(0, flat.numel(), chunk):
            yield flat[start : start + chunk]
        return
    if t.numel() <= chunk or t.dim() == 0:
        yield t
        return
    if t.dim() == 1:
        for start in range(0, t.shape[0], chunk):
            yield t[start : start + chunk]
        return
    per_row = max(1, t[0].numel())
    if per_row > chunk:
        for row in range(t.shape[0]):
            yield from _blocks(t[row], chunk)
        return
    rows = max(1, chunk // per_row)
    for start in range(0, t.shape[0], rows):
        yield t[start : start + rows]
