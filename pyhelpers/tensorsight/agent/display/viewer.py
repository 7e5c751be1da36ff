"""View Tensor: a bounded, JSON-able picture of one tensor's or array's values, for the editor's viewer panel.

Called from a debugger stop: the extension's ``tensorsight.viewTensor`` command evaluates ``view_json(<expr>)``
(as ``tensorsight.view_tensor``) in the stopped frame, and the webview draws the answer. The payload has
the value histogram (bins over finite values; zeros, NaN, +Inf and -Inf counted exactly over the whole tensor, never
the downsample), min/max/mean/std, and one picture: a line for 1-D (min/max per bucket, so spikes and NaNs stay
visible), a heatmap grid for 2-D (block pooling on the tensor's own device, at most ``MAX_SIDE`` a side; a cell
holding any NaN/+Inf/-Inf stays marked), an image grid for [C,H,W], [H,W,C] and [B,C,H,W], and a 2-D slice picked by
index for higher ranks.

A good guest: reads only (no in-place writes, no ``_version`` bump), no autograd graph, no RNG, and every failure
becomes a ``message`` in the payload instead of an exception. While torch compiles or traces it answers a message and
touches nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from tensorsight.agent.runtime.transforming import transforming
from tensorsight.agent.runtime.user_libs import is_array, is_tensor, loaded_torch

MAX_SIDE = 256  # heatmap and image cells a side
LINE_POINTS = 2048  # 1-D buckets
BINS = 64
MAX_IMAGES = 16  # images of a batch drawn

# cell marks in heatmaps and lines
FINITE, NAN, POSINF, NEGINF, EMPTY = 0, 1, 2, 3, 4


def view_json(value: Any, index: Sequence[int] = (), normalize: str = "channel") -> str:
    """``view`` as a JSON string (what a DAP evaluate returns to the extension)."""
    return json.dumps(view(value, index=index, normalize=normalize), allow_nan=False)


view_tensor = view_json  # the public name: ``tensorsight.view_tensor(x)``


def view(value: Any, *, index: Sequence[int] = (), normalize: str = "channel") -> dict[str, Any]:
    """The viewer payload of ``value``; never raises: a problem becomes ``{"kind": "message", "message": ...}``."""
    try:
        if transforming():
            return _message("torch is compiling or tracing; the viewer stands aside")
        if is_tensor(value):
            torch = loaded_torch()
            with torch.no_grad():
                return _view(_TorchOps(torch), value.detach(), list(index), normalize)
        if is_array(value):
            import numpy

            return _view(_NumpyOps(numpy), value, list(index), normalize)
        return _message(f"not a tensor or array: {type(value).__name__}")
    except Exception as error:  # noqa: BLE001 - a guest never lets an error escape into the user's program
        return _message(f"could not view this value: {type(error).__name__}: {error}")


def _message(text: str, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"kind": "message", "message": text, "meta": meta or {}}


class _NumpyOps:
    def __init__(self, np: Any) -> None:
        self.np = np

    def meta(self, x: Any) -> dict[str, Any]:
        return {"shape": list(x.shape), "dtype": str(x.dtype), "device": "cpu", "library": "numpy"}

    def special(self, x: Any) -> str | None:
        if x.dtype == object or x.dtype.kind in "USVM":
            return f"dtype {x.dtype} has no numeric values to view"
        return None

    def as_float(self, x: Any) -> Any:
        np = self.np
        if np.iscomplexobj(x):
            return np.abs(x).astype(np.float64)
        return np.asarray(x).astype(np.float64)

    def pad(self, x: Any, rows: int, cols: int, value: float = 0.0) -> Any:
        return self.np.pad(x, ((0, rows), (0, cols)), constant_values=value)

    def zeros_like_bool(self, x: Any) -> Any:
        return self.np.zeros(x.shape, dtype=bool)

    def histogram(self, finite: Any, low: float, high: float, bins: int) -> list[int]:
        counts, _ = self.np.histogram(finite, bins=bins, range=(low, high))
        return [int(c) for c in counts]

    def finite_values(self, x: Any, mask: Any) -> Any:
        return x[mask]

    def std(self, finite: Any) -> float:
        return float(finite.std(ddof=1)) if finite.size > 1 else 0.0

    def tolist(self, x: Any) -> list[Any]:
        return x.tolist()

    def moveaxis(self, x: Any, src: int, dst: int) -> Any:
        return self.np.moveaxis(x, src, dst)

    def bucket_max(self, x: Any) -> Any:
        return x.max(1)


class _TorchOps:
    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.np = torch  # isnan, isinf, isfinite, where, abs share names

    def meta(self, x: Any) -> dict[str, Any]:
        return {
            "shape": list(x.shape),
            "dtype": str(x.dtype).replace("torch.", ""),
            "device": str(x.device),
            "library": "torch",
        }

    def special(self, x: Any) -> str | None:
        if x.is_meta:
            return "a meta tensor has a shape but no values"
        if x.layout != self.torch.strided:
            return f"a sparse or non-strided tensor ({x.layout}) is not drawn; view its .to_dense() copy instead"
        return None

    def as_float(self, x: Any) -> Any:
        if x.is_complex():
            return x.abs().double()
        return x.double() if x.dtype == self.torch.float64 or x.numel() <= 1 << 24 else x.float()

    def pad(self, x: Any, rows: int, cols: int, value: float = 0.0) -> Any:
        return self.torch.nn.functional.pad(x, (0, cols, 0, rows), value=value)

    def zeros_like_bool(self, x: Any) -> Any:
        return self.torch.zeros(x.shape, dtype=self.torch.bool, device=x.device)

    def histogram(self, finite: Any, low: float, high: float, bins: int) -> list[int]:
        counts = self.torch.histc(finite.double() if finite.dtype != self.torch.float64 else finite, bins, low, high)
        return [int(c) for c in counts.tolist()]

    def finite_values(self, x: Any, mask: Any) -> Any:
        return x[mask]

    def std(self, finite: Any) -> float:
        return float(finite.double().std()) if finite.numel() > 1 else 0.0

    def tolist(self, x: Any) -> list[Any]:
        return x.cpu().tolist()

    def moveaxis(self, x: Any, src: int, dst: int) -> Any:
        return self.torch.movedim(x, src, dst)

    def bucket_max(self, x: Any) -> Any:
        return x.amax(1)


def _number(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _view(ops: Any, x: Any, index: list[int], normalize: str) -> dict[str, Any]:
    meta = ops.meta(x)
    problem = ops.special(x)
    if problem:
        return _message(problem, meta)
    meta["elements"] = int(math.prod(meta["shape"]))
    if meta["elements"] == 0:
        return _message("the tensor is empty", meta)
    xf = ops.as_float(x)
    np = ops.np
    nan = np.isnan(xf)
    inf = np.isinf(xf)
    finite_mask = np.isfinite(xf)
    counts = {
        "nan": int(nan.sum()),
        "posinf": int((inf & (xf > 0)).sum()),
        "neginf": int((inf & (xf < 0)).sum()),
        "zero": int((xf == 0).sum()),
        "finite": int(finite_mask.sum()),
    }
    finite = ops.finite_values(xf, finite_mask)
    stats: dict[str, float | None] = {"min": None, "max": None, "mean": None, "std": None}
    histogram: dict[str, Any] = {"edges": [], "counts": []}
    if counts["finite"]:
        low, high = float(finite.min()), float(finite.max())
        stats = {
            "min": low,
            "max": high,
            "mean": _number(float(finite.sum()) / counts["finite"]),
            "std": _number(ops.std(finite)),
        }
        bins = BINS if high > low else 1
        top = high if high > low else low + 1.0
        histogram = {
            "edges": [low + (top - low) * i / bins for i in range(bins + 1)],
            "counts": ops.histogram(finite, low, top, bins),
        }
    payload: dict[str, Any] = {"meta": meta, "counts": counts, "stats": stats, "histogram": histogram}
    shape = meta["shape"]
    if len(shape) == 0:
        payload["kind"] = "scalar"
        return payload
    if len(shape) == 1:
        payload["kind"] = "line"
        payload["line"] = _line(ops, xf)
        return payload
    image = _image_layout(shape)
    if image and not index:
        payload["kind"] = "image"
        payload["image"] = _images(ops, xf, image, normalize)
        return payload
    plane, picked = _plane(xf, shape, index)
    payload["kind"] = "heatmap"
    payload["slice"] = picked
    payload["heatmap"] = _heatmap(ops, plane)
    return payload


def _plane(xf: Any, shape: list[int], index: list[int]) -> tuple[Any, list[int]]:
    """The 2-D slice of the last two dimensions at ``index`` over the leading ones (0 where not given, clamped)."""
    lead = shape[:-2]
    picked = [min(max(int(index[i]) if i < len(index) else 0, 0), size - 1) for i, size in enumerate(lead)]
    plane = xf
    for i in picked:
        plane = plane[i]
    return plane, picked


def _pool(ops: Any, plane: Any, max_rows: int, max_cols: int) -> dict[str, Any]:
    """Block pooling: mean of finite values per block; a block with any NaN, +Inf, -Inf is marked (in that order)."""
    np = ops.np
    rows, cols = int(plane.shape[0]), int(plane.shape[1])
    kr, kc = max(1, math.ceil(rows / max_rows)), max(1, math.ceil(cols / max_cols))
    out_r, out_c = math.ceil(rows / kr), math.ceil(cols / kc)
    pad_r, pad_c = out_r * kr - rows, out_c * kc - cols
    finite = np.isfinite(plane)
    nan = np.isnan(plane)
    posinf = np.isinf(plane) & (plane > 0)
    neginf = np.isinf(plane) & (plane < 0)

    def blocks(t: Any) -> Any:
        t = ops.pad(t * 1.0, pad_r, pad_c)
        return t.reshape(out_r, kr, out_c, kc).sum(3).sum(1)

    values = np.where(finite, plane, finite * 0.0)  # zeros from the mask: NaN * 0 would stay NaN
    sums = blocks(values)
    seen = blocks(finite)
    nans, posinfs, neginfs = blocks(nan), blocks(posinf), blocks(neginf)  # once each: every pass reads the plane
    means = sums / (seen + (seen == 0))
    marks = (seen == 0) * EMPTY
    marks = np.where(neginfs > 0, NEGINF + 0 * marks, marks)
    marks = np.where(posinfs > 0, POSINF + 0 * marks, marks)
    marks = np.where(nans > 0, NAN + 0 * marks, marks)
    marks = np.where((seen > 0) & (nans + posinfs + neginfs == 0), FINITE + 0 * marks, marks)
    mean_list = ops.tolist(means)
    mark_list = [[int(m) for m in row] for row in ops.tolist(marks)]
    values_out = [
        [_number(float(v)) if mark_row[j] == FINITE else None for j, v in enumerate(row)]
        for row, mark_row in zip(mean_list, mark_list, strict=True)
    ]
    return {
        "rows": out_r,
        "cols": out_c,
        "blockRows": kr,
        "blockCols": kc,
        "sourceRows": rows,
        "sourceCols": cols,
        "values": values_out,
        "marks": mark_list,
    }


def _heatmap(ops: Any, plane: Any) -> dict[str, Any]:
    return _pool(ops, plane, MAX_SIDE, MAX_SIDE)


def _line(ops: Any, xf: Any) -> dict[str, Any]:
    """Min, max and marks per bucket, so one spike or NaN in a million points still shows."""
    n = int(xf.shape[0])
    k = max(1, math.ceil(n / LINE_POINTS))
    np = ops.np
    column = xf.reshape(n, 1)
    pooled = _pool(ops, column, LINE_POINTS, 1)
    out = pooled["rows"]
    pad = out * k - n
    finite = np.isfinite(column)
    high = np.where(finite, column, finite * 0.0 - math.inf)  # a bucket with no finite value ends at -inf: None
    low = np.where(finite, column, finite * 0.0 + math.inf)
    high = ops.bucket_max(ops.pad(high, pad, 0, -math.inf).reshape(out, k))
    low = -ops.bucket_max(-ops.pad(low, pad, 0, math.inf).reshape(out, k))
    highs, lows = ops.tolist(high), ops.tolist(low)
    marks = [row[0] for row in pooled["marks"]]
    return {
        "points": out,
        "bucket": k,
        "length": n,
        "marks": marks,
        "min": [_number(float(v)) for v in lows],
        "max": [_number(float(v)) for v in highs],
    }


def _image_layout(shape: list[int]) -> str | None:
    if len(shape) == 3 and shape[0] in (1, 3, 4):
        return "CHW"
    if len(shape) == 3 and shape[-1] in (1, 3, 4):
        return "HWC"
    if len(shape) == 4 and shape[1] in (1, 3, 4):
        return "BCHW"
    return None


def _images(ops: Any, xf: Any, layout: str, normalize: str) -> dict[str, Any]:
    """Images as channel planes pooled to ``MAX_SIDE``, normalized to [0, 1] per channel or over all channels."""
    batch = xf.reshape(1, *xf.shape) if layout != "BCHW" else xf
    if layout == "HWC":
        batch = ops.moveaxis(batch, 3, 1)
    total = int(batch.shape[0])
    side = MAX_SIDE if total == 1 else max(32, MAX_SIDE // 4)
    images = []
    for b in range(min(total, MAX_IMAGES)):
        channels = [_pool(ops, batch[b][c], side, side) for c in range(int(batch.shape[1]))]
        images.append({"channels": channels})
    ranges = [_range(ch["values"]) for img in images for ch in img["channels"]]
    if normalize == "global":
        low = min((r[0] for r in ranges if r), default=0.0)
        high = max((r[1] for r in ranges if r), default=1.0)
        for img in images:
            for ch in img["channels"]:
                ch["low"], ch["high"] = low, high
    else:
        for img in images:
            for ch in img["channels"]:
                r = _range(ch["values"])
                ch["low"], ch["high"] = r if r else (0.0, 1.0)
    return {"layout": layout, "normalize": normalize, "count": total, "shown": len(images), "images": images}


def _range(values: list[list[float | None]]) -> tuple[float, float] | None:
    flat = [v for row in values for v in row if v is not None]
    return (min(flat), max(flat)) if flat else None
