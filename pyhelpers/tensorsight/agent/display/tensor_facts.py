"""The facts a tensor's or an ndarray's line says (dtype, shape, device, tags, figures, small values, grad), read
without changing the value.

Called by ``presentation`` (the one-line value) and ``module_scan`` (lazy parameters); the line itself is written by
``core.summary``.
"""

from __future__ import annotations

import sys
from typing import Any

from tensorsight.agent.display.reading import quiet_torch, safe_stats
from tensorsight.core.notation import short_dtype
from tensorsight.core.stats.figures import Stats
from tensorsight.core.summary import SMALL, TensorFacts, format_count, format_number


def tensor_facts(t: Any) -> TensorFacts:
    """Everything a tensor line says, read without changing the tensor."""
    torch = sys.modules["torch"]
    with quiet_torch():
        dtype = short_dtype(t.dtype)
        try:
            shape: tuple[int, ...] | None = tuple(int(d) for d in t.shape)
        except Exception:  # noqa: BLE001 - nested or uninitialised tensors have no single shape
            shape = None
        where = str(t.device)
        tags = _tensor_tags(torch, t)
        if uninitialised(torch, t):
            return TensorFacts(
                dtype=dtype, shape=None, where=where, note="uninitialised (lazy) parameter: no shape yet"
            )
        if shape is None:
            return TensorFacts(dtype=dtype, shape=None, where=where, tags=tags, note=_shapeless_note(t))
        stats = safe_stats(t)
        values = _small_values(torch, t, stats)
        grad = _kept_grad(t)
        grad_fn = t.grad_fn
        return TensorFacts(
            dtype=dtype,
            shape=shape,
            where=where,
            stats=stats,
            values=values,
            tags=tags,
            requires_grad=bool(t.requires_grad),
            grad=safe_stats(grad) if grad is not None else None,
            grad_fn=type(grad_fn).__name__ if grad_fn is not None else None,
        )


def uninitialised(torch: Any, t: Any) -> bool:
    """Parameters of lazy modules (``nn.LazyLinear``) before their first forward: no shape, no values."""
    mixin = getattr(getattr(torch.nn, "parameter", None), "UninitializedTensorMixin", None)
    return isinstance(mixin, type) and isinstance(t, mixin)


def _shapeless_note(t: Any) -> str:
    if getattr(t, "is_nested", False):
        return "nested tensor: components have different shapes"
    return f"{type(t).__name__}: no shape yet"


def _tensor_tags(torch: Any, t: Any) -> tuple[str, ...]:
    tags: list[str] = []
    layout = str(t.layout).replace("torch.", "").lstrip("_")
    if layout == "sparse_coo":
        tags.append(f"sparse_coo nnz={format_count(int(t._nnz()))}")
        if not t.is_coalesced():
            tags.append("uncoalesced")
    elif layout.startswith("sparse_"):
        tags.append(f"{layout} nnz={format_count(int(t._nnz()))}")
    elif layout != "strided":
        tags.append(layout)
    if getattr(t, "is_nested", False):
        tags.append("nested")
    if t.is_quantized:
        scheme = str(t.qscheme()).replace("torch.", "")
        if scheme in ("per_tensor_affine", "per_tensor_symmetric"):
            tags.append(f"scale={format_number(float(t.q_scale()))} zero_point={int(t.q_zero_point())}")
        else:
            tags.append(f"{scheme.replace('_', '-')} axis={int(t.q_per_channel_axis())}")
    cls = type(t)
    if cls is not torch.Tensor and cls is not torch.nn.Parameter:
        tags.append(f"({cls.__name__})")
    return tuple(tags)


def _small_values(torch: Any, t: Any, stats: Stats) -> Any:
    """Values of a tensor with at most SMALL elements, as Python scalars (None when there is nothing to show)."""
    if not stats.has_values or stats.numel > SMALL or stats.numel == 0:
        return None
    try:
        dense = t.detach()
        if dense.layout != torch.strided:
            dense = dense.to_dense()
        if dense.is_quantized:
            dense = dense.dequantize()
        return dense.tolist()
    except Exception:  # noqa: BLE001 - the line simply has no values then
        return None


def _kept_grad(t: Any) -> Any:
    """``t.grad`` where autograd keeps one (reading it on other non-leaf tensors only raises a warning)."""
    try:
        if t.is_leaf or t.retains_grad:
            return t.grad
    except Exception:  # noqa: BLE001
        pass
    return None


# ---- numpy -------------------------------------------------------------------------------------------------------


def array_facts(a: Any) -> TensorFacts:
    """Everything an ndarray line says; ``where`` names the array class (ndarray, memmap...)."""
    stats = safe_stats(a)
    values = None
    if stats.has_values and 0 < stats.numel <= SMALL:
        try:
            values = a.tolist()
        except Exception:  # noqa: BLE001
            values = None
    return TensorFacts(
        dtype=short_dtype(a.dtype),
        shape=tuple(int(d) for d in a.shape),
        where=type(a).__name__,
        stats=stats,
        values=values,
    )
