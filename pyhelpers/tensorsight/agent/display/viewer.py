"""View Tensor: a bounded, JSON-able picture of one tensor's or array's values, for the editor's viewer panel.

Called from a debugger stop: the extension's ``tensorsight.viewTensor`` command evaluates ``view_json(<expr>)``
(as ``tensorsight.view_tensor``) in the stopped frame, and the webview draws the answer; ``tensorsight.show`` (the
notebook picture, ``display/picture.py``) and the doctor's first-NaN PNG draw the same payload.

The payload has the exact figures of the whole tensor from ``core.stats`` through the Variables view's cache (NaN,
+Inf, -Inf and zero counts, finite count, min/max/mean/std: nothing is counted twice), the value histogram (bins
over finite values, from a deterministic strided sample past ``SAMPLE_THRESHOLD`` elements, marked ``sampled`` with
its ``sample_size``), and one picture: a line for 1-D (min/max per bucket, so spikes and NaNs stay visible), a
heatmap grid for 2-D (block pooling on the tensor's own device, at most ``MAX_SIDE`` a side; a cell holding any
NaN/+Inf/-Inf stays marked), an image grid for [C,H,W], [H,W,C] and [B,C,H,W], and a 2-D slice picked by index for
higher ranks.

Cost: the figures (about 4 ``sum`` passes, once per tensor version thanks to the cache), one ``sum`` pass over the
pictured values for the block means, two for a line's bucket range; only the blocks (buckets) whose sums are not
finite are read again element by element, to tell NaN from +Inf/-Inf. Every pass reads the tensor where it is, in
views (no pad, no copy of a float32/64 tensor), and a handful of small transfers bring the answer back. The work
stops at ``budget_s``: what is done is answered, with ``partial: true`` and ``partialReason``.

A good guest: reads only (no in-place writes, no ``_version`` bump), no autograd graph, no user
``__torch_function__``, no RNG, and every failure becomes a ``message`` in the payload instead of an exception.
While torch compiles or traces it answers a message and touches nothing.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Sequence
from typing import Any

from tensorsight.agent.runtime.transforming import transforming
from tensorsight.agent.runtime.user_libs import is_array, is_tensor, loaded_torch

MAX_SIDE = 256  # heatmap and image cells a side
LINE_POINTS = 2048  # 1-D buckets
BINS = 64
MAX_IMAGES = 16  # images of a batch drawn
SAMPLE_THRESHOLD = 1 << 22  # past this many elements the histogram is binned from a strided sample...
SAMPLE_ELEMENTS = 1 << 20  # ...of about this many elements
DEFAULT_BUDGET_S = 1.0  # seconds of work before the answer is cut short (``partial``)

# cell marks in heatmaps and lines
FINITE, NAN, POSINF, NEGINF, EMPTY = 0, 1, 2, 3, 4


def view_json(
    value: Any, index: Sequence[int] = (), normalize: str = "channel", budget_s: float = DEFAULT_BUDGET_S
) -> str:
    """``view`` as a JSON string (what a DAP evaluate returns to the extension)."""
    return json.dumps(view(value, index=index, normalize=normalize, budget_s=budget_s), allow_nan=False)


view_tensor = view_json  # the public name: ``tensorsight.view_tensor(x)``


def view(
    value: Any, *, index: Sequence[int] = (), normalize: str = "channel", budget_s: float = DEFAULT_BUDGET_S
) -> dict[str, Any]:
    """The viewer payload of ``value``; never raises: a problem becomes ``{"kind": "message", "message": ...}``."""
    try:
        if transforming():
            return _message("torch is compiling or tracing; the viewer stands aside")
        clock = _Clock(budget_s)
        if is_tensor(value):
            from tensorsight.core.stats.torch_layout import plain_tensors

            torch = loaded_torch()
            with torch.no_grad(), plain_tensors(torch):
                return _view(_TorchOps(torch), value.detach(), list(index), normalize, clock, value)
        if is_array(value):
            import numpy

            with numpy.errstate(all="ignore"):
                return _view(_NumpyOps(numpy), value, list(index), normalize, clock, value)
        return _message(f"not a tensor or array: {type(value).__name__}")
    except Exception as error:  # noqa: BLE001 - a guest never lets an error escape into the user's program
        return _message(f"could not view this value: {type(error).__name__}: {error}")


def _message(text: str, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"kind": "message", "message": text, "meta": meta or {}}


class _Clock:
    """The time budget of one payload: ``spent`` once ``budget_s`` seconds have passed since it was made."""

    def __init__(self, budget_s: float) -> None:
        self.deadline = time.perf_counter() + max(0.0, float(budget_s))
        self.cut: str | None = None  # what a picture left undone when the budget ran out (said as ``partialReason``)

    def spent(self) -> bool:
        return time.perf_counter() >= self.deadline


class _NumpyOps:
    def __init__(self, np: Any) -> None:
        self.np = np

    def meta(self, x: Any) -> dict[str, Any]:
        return {"shape": list(x.shape), "dtype": str(x.dtype), "device": "cpu", "library": "numpy"}

    def special(self, x: Any) -> str | None:
        if x.dtype == object or x.dtype.kind in "USVmM":
            return f"dtype {x.dtype} has no numeric values to view"
        return None

    def as_float(self, x: Any) -> Any:
        """The values a picture shows: float32/64 as they are (no copy), ``|z|`` of complex, others as float64."""
        np = self.np
        x = np.asarray(x)
        if np.iscomplexobj(x):
            return np.abs(x)
        return x if x.dtype in (np.float32, np.float64) else x.astype(np.float64)

    def reduce(self, x: Any, how: str, axis: int) -> Any:
        return getattr(x, {"sum": "sum", "max": "max", "min": "min"}[how])(axis)

    def cat(self, parts: list[Any], axis: int) -> Any:
        return parts[0] if len(parts) == 1 else self.np.concatenate(parts, axis)

    def double(self, x: Any) -> Any:
        return self.np.asarray(x, dtype=self.np.float64)

    def small(self, values: Any, like: Any) -> Any:
        return self.np.asarray(values, dtype=self.np.float64)

    def index(self, positions: list[int], like: Any) -> Any:
        return self.np.asarray(positions, dtype=self.np.int64)

    def histogram(self, values: Any, low: float, high: float, bins: int) -> list[int]:
        """Counts of the finite values in [low, high] (NaN and ±Inf fall outside any range: not counted)."""
        counts, _ = self.np.histogram(values, bins=bins, range=(low, high))
        return [int(c) for c in counts]

    def tolist(self, x: Any) -> Any:
        return x.tolist()

    def moveaxis(self, x: Any, src: int, dst: int) -> Any:
        return self.np.moveaxis(x, src, dst)


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
        """The values a picture shows: float32/64 as they are (no copy), ``|z|`` of complex, others as float32."""
        torch = self.torch
        if x.is_quantized:
            x = x.dequantize()
        if x.is_complex():
            return x.abs()
        return x if x.dtype in (torch.float32, torch.float64) else x.float()

    def reduce(self, x: Any, how: str, axis: int) -> Any:
        return getattr(x, {"sum": "sum", "max": "amax", "min": "amin"}[how])(axis)

    def cat(self, parts: list[Any], axis: int) -> Any:
        return parts[0] if len(parts) == 1 else self.torch.cat(parts, axis)

    def double(self, x: Any) -> Any:
        return x.double()

    def small(self, values: Any, like: Any) -> Any:
        return self.torch.tensor(values, dtype=self.torch.float64, device=like.device)

    def index(self, positions: list[int], like: Any) -> Any:
        return self.torch.tensor(positions, dtype=self.torch.long, device=like.device)

    def histogram(self, values: Any, low: float, high: float, bins: int) -> list[int]:
        """Counts of the finite values in [low, high] (``histc`` leaves NaN and ±Inf out: no filtering copy)."""
        counts = self.torch.histc(values, bins, low, high)
        return [int(c) for c in counts.tolist()]

    def tolist(self, x: Any) -> Any:
        return x.cpu().tolist()

    def moveaxis(self, x: Any, src: int, dst: int) -> Any:
        return self.torch.movedim(x, src, dst)


def _number(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value.real) if isinstance(value, complex) else float(value)
    return value if math.isfinite(value) else None


def _figures(value: Any) -> Any:
    """The exact figures of ``value`` from ``core.stats``, through the Variables view's cache (zeros counted)."""
    from tensorsight.agent.display.reading import CACHE

    return CACHE.stats(value, zeros=True)


def _view(ops: Any, x: Any, index: list[int], normalize: str, clock: _Clock, original: Any) -> dict[str, Any]:
    """The payload of ``x`` (``original`` detached); the figures are looked up for ``original``, the object the
    Variables view summarised (the cache knows tensors by identity, and ``detach`` makes a new one each time)."""
    meta = ops.meta(x)
    problem = ops.special(x)
    if problem:
        return _message(problem, meta)
    meta["elements"] = int(math.prod(meta["shape"]))
    if meta["elements"] == 0:
        return _message("the tensor is empty", meta)
    figures = _figures(original)
    if figures is None or not figures.has_values:
        return _message(getattr(figures, "note", None) or "no numeric values to view", meta)
    counts = {
        "nan": int(figures.nan or 0),
        "posinf": int(figures.posinf or 0),
        "neginf": int(figures.neginf or 0),
        "zero": int(figures.zeros or 0),
        "finite": int(figures.finite),
    }
    stats: dict[str, float | None] = {
        "min": _number(figures.min),
        "max": _number(figures.max),
        "mean": _number(figures.mean),
        "std": _number(figures.std),
    }
    payload: dict[str, Any] = {
        "meta": meta,
        "counts": counts,
        "stats": stats,
        "histogram": {"edges": [], "counts": []},
        "countsExact": bool(figures.exact),
    }
    if isinstance(figures.mean, complex):
        stats["meanImag"] = _number(figures.mean.imag)
    if clock.spent():
        return _partial(payload, "the time budget was spent on the exact counts")
    if counts["finite"] and stats["min"] is not None and stats["max"] is not None:
        payload["histogram"] = _histogram(ops, x, stats["min"], stats["max"], counts["finite"])
    if clock.spent():
        return _partial(payload, "the time budget was spent before the picture")
    shape = meta["shape"]
    if len(shape) == 0:
        payload["kind"] = "scalar"
        return payload
    if len(shape) == 1:
        payload["kind"] = "line"
        payload["line"] = _line(ops, ops.as_float(x), clock)
        return _cut(payload, clock)
    image = _image_layout(shape)
    if image and not index:
        payload["kind"] = "image"
        payload["image"] = _images(ops, x, image, normalize, clock)
        if payload["image"]["shown"] < min(payload["image"]["count"], MAX_IMAGES):
            clock.cut = "the time budget ran out before every image was drawn"
        return _cut(payload, clock)
    plane, picked = _plane(x, shape, index)
    payload["kind"] = "heatmap"
    payload["slice"] = picked
    payload["heatmap"] = _pool(ops, ops.as_float(plane), MAX_SIDE, MAX_SIDE, clock)[0]
    return _cut(payload, clock)


def _partial(payload: dict[str, Any], reason: str) -> dict[str, Any]:
    """What is done when the budget ran out: the figures (and histogram, if made), no picture."""
    payload.update(kind="message", message=f"partial view: {reason}", partial=True, partialReason=reason)
    return payload


def _cut(payload: dict[str, Any], clock: _Clock) -> dict[str, Any]:
    """A picture drawn in part (``clock.cut``) is still shown, marked ``partial`` with the reason."""
    if clock.cut:
        payload.update(partial=True, partialReason=clock.cut)
    return payload


def _histogram(ops: Any, x: Any, low: float, high: float, finite_count: int) -> dict[str, Any]:
    """Bins over [min, max] of the finite values; past SAMPLE_THRESHOLD elements from a strided sample, whose counts
    ``scale`` multiplies to estimate the whole tensor's (the exact counts are in ``counts``)."""
    from tensorsight.core.stats.dispatch import strided_sample

    source = x if int(math.prod(x.shape)) <= SAMPLE_THRESHOLD else strided_sample(x, SAMPLE_ELEMENTS)
    values = ops.as_float(source)
    bins = BINS if high > low else 1
    top = high if high > low else low + 1.0
    hist: dict[str, Any] = {
        "edges": [low + (top - low) * i / bins for i in range(bins + 1)],
        "counts": ops.histogram(values, low, top, bins),
    }
    if source is not x:
        binned = sum(hist["counts"])
        hist.update(sampled=True, sample_size=int(math.prod(source.shape)), scale=finite_count / max(1, binned))
    return hist


def _plane(x: Any, shape: list[int], index: list[int]) -> tuple[Any, list[int]]:
    """The 2-D slice of the last two dimensions at ``index`` over the leading ones (0 where not given, clamped)."""
    lead = shape[:-2]
    picked = [min(max(int(index[i]) if i < len(index) else 0, 0), size - 1) for i, size in enumerate(lead)]
    plane = x
    for i in picked:
        plane = plane[i]
    return plane, picked


WIDE_BLOCK = 16  # blocks at least this wide are reduced along their columns first


def _blocks(ops: Any, t: Any, kr: int, kc: int, how: str) -> Any:
    """``how`` (sum, max, min) over blocks of ``kr`` x ``kc`` of the last two dimensions of ``t``, the last block
    row and column ragged: views of ``t`` split in place (no pad, no copy), the last dimension reduced first."""
    rows, cols = int(t.shape[-2]), int(t.shape[-1])
    lead = tuple(int(s) for s in t.shape[:-2])
    fr, fc = rows // kr, cols // kc
    rr, rc = rows - fr * kr, cols - fc * kc

    def red(u: Any, axis: int) -> Any:
        return ops.reduce(u, how, axis)

    top, bottom = [], []
    if fr and fc:
        blocks = t[..., : fr * kr, : fc * kc].reshape(*lead, fr, kr, fc, kc)
        # narrow blocks: rows of a block first (adding whole rows vectorizes), then the few columns left
        top.append(red(red(blocks, -1), -2) if kc >= WIDE_BLOCK else red(red(blocks, -3), -1))
    if fr and rc:
        top.append(red(red(t[..., : fr * kr, fc * kc :].reshape(*lead, fr, kr, rc), -1), -1)[..., None])
    if rr and fc:
        bottom.append(red(red(t[..., fr * kr :, : fc * kc].reshape(*lead, rr, fc, kc), -1), -2)[..., None, :])
    if rr and rc:
        bottom.append(red(red(t[..., fr * kr :, fc * kc :], -1), -1)[..., None, None])
    return ops.cat([ops.cat(part, -1) for part in (top, bottom) if part], -2)


def _pool(ops: Any, planes: Any, max_rows: int, max_cols: int, clock: _Clock) -> list[dict[str, Any]]:
    """Block pooling of float planes (..., rows, cols): the mean of each block, from one ``sum`` pass; a block whose
    sum is not finite is read again (runs of such block rows, CAREFUL_ELEMENTS at a time: a max and a min pass) to
    mark any NaN, +Inf, -Inf (in that order) or, when only the float sum overflowed, to take its mean in float64.
    Past the time budget the blocks not read again are marked from their sums (NaN: NaN, or both infinities) and
    ``clock.cut`` says so. One dict per plane, leading dimensions flattened."""
    np = ops.np
    rows, cols = int(planes.shape[-2]), int(planes.shape[-1])
    kr, kc = max(1, math.ceil(rows / max_rows)), max(1, math.ceil(cols / max_cols))
    out_r, out_c = math.ceil(rows / kr), math.ceil(cols / kc)
    sums = ops.double(_blocks(ops, planes, kr, kc, "sum")).reshape(-1, out_r, out_c)
    row_sizes = ops.small([min(kr, rows - r * kr) for r in range(out_r)], sums)
    col_sizes = ops.small([min(kc, cols - c * kc) for c in range(out_c)], sums)
    sizes = row_sizes[:, None] * col_sizes[None, :]
    means = sums / sizes
    # marks from the sums alone; the blocks read again below get exact ones
    marks = np.where(sums == -math.inf, float(NEGINF), np.zeros_like(sums))
    marks = np.where(sums == math.inf, float(POSINF), marks)
    marks = np.where(np.isnan(sums), float(NAN), marks)
    strips = np.isfinite(sums).all(-1)
    bad = [(p, r) for p, row in enumerate(ops.tolist(strips)) for r, ok in enumerate(row) if not ok]
    per_run = max(1, CAREFUL_ELEMENTS // max(1, kr * cols))
    for p, first, last in _runs(bad, per_run):
        if clock.spent():
            clock.cut = "the time budget ran out: some NaN/Inf cells are marked from their block sums"
            break
        strip = _nth_plane(planes, p)[first * kr : last * kr]
        # max and min propagate NaN and show +Inf/-Inf: the marks, in two reductions and no temporary
        high, low = _blocks(ops, strip, kr, kc, "max"), _blocks(ops, strip, kr, kc, "min")
        mark = np.where(low == -math.inf, float(NEGINF), np.zeros_like(ops.double(high)))
        mark = np.where(high == math.inf, float(POSINF), mark)
        marks[p, first:last] = np.where(np.isnan(high) | np.isnan(low), float(NAN), mark)
        if bool((marks[p, first:last] == FINITE).any()):  # finite values whose float sum overflowed: float64 means
            means[p, first:last] = _blocks(ops, ops.double(strip), kr, kc, "sum") / sizes[first:last]
    means = np.where(marks == FINITE, means, math.nan)
    host = ops.tolist(ops.cat([means[:, None], marks[:, None]], 1))  # one transfer: (planes, 2, rows, cols)
    return [
        {
            "rows": out_r,
            "cols": out_c,
            "blockRows": kr,
            "blockCols": kc,
            "sourceRows": rows,
            "sourceCols": cols,
            "values": [[v if v == v else None for v in row] for row in plane_means],
            "marks": [list(map(int, row)) for row in plane_marks],
        }
        for plane_means, plane_marks in host
    ]


def _runs(bad: list[tuple[int, int]], longest: int) -> list[tuple[int, int, int]]:
    """(plane, first, last) runs of consecutive bad block rows of a plane, at most ``longest`` block rows each."""
    runs: list[tuple[int, int, int]] = []
    for p, r in bad:
        if runs and runs[-1][0] == p and runs[-1][2] == r and r - runs[-1][1] < longest:
            runs[-1] = (p, runs[-1][1], r + 1)
        else:
            runs.append((p, r, r + 1))
    return runs


def _nth_plane(planes: Any, p: int) -> Any:
    """The ``p``-th 2-D plane of ``planes`` (..., rows, cols), leading dimensions in C order, by indexing (no copy)."""
    lead = [int(size) for size in planes.shape[:-2]]
    plane = planes
    for i, size in enumerate(lead):
        plane = plane[(p // math.prod(lead[i + 1 :])) % size]
    return plane


def _buckets(ops: Any, x: Any, k: int, how: str) -> Any:
    """``how`` (max, min) over consecutive buckets of ``k`` values of a 1-D ``x`` (the last one ragged), in views."""
    n = int(x.shape[0])
    whole = n // k
    parts = []
    if whole:
        parts.append(ops.reduce(x[: whole * k].reshape(whole, k), how, 1))
    if whole * k < n:
        parts.append(ops.reduce(x[whole * k :], how, 0)[None])
    return ops.cat(parts, 0)


def _line(ops: Any, xf: Any, clock: _Clock) -> dict[str, Any]:
    """Min, max and marks per bucket, so one spike or NaN in a million points still shows: a ``max`` and a ``min``
    pass (both propagate NaN, and show +Inf/-Inf: the marks are exact from them), then only the buckets holding
    NaN/Inf are read again (CAREFUL_ELEMENTS at a time) for the range of their finite values; past the time budget
    the rest keep no range (None) and ``clock.cut`` says so."""
    np = ops.np
    n = int(xf.shape[0])
    k = max(1, math.ceil(n / LINE_POINTS))
    out = math.ceil(n / k)
    whole = n // k
    highs = ops.double(_buckets(ops, xf, k, "max"))
    lows = ops.double(_buckets(ops, xf, k, "min"))
    marks = np.where(lows == -math.inf, float(NEGINF), np.zeros_like(highs))
    marks = np.where(highs == math.inf, float(POSINF), marks)
    marks = np.where(np.isnan(highs) | np.isnan(lows), float(NAN), marks)
    bad = [i for i, m in enumerate(ops.tolist(marks)) if m != FINITE]
    highs = np.where(marks == FINITE, highs, math.nan)  # a bucket holding NaN/Inf: no range until read again
    lows = np.where(marks == FINITE, lows, math.nan)
    per_run = max(1, CAREFUL_ELEMENTS // k)
    groups = [bad[i : i + per_run] for i in range(0, len(bad), per_run)]
    for group in groups:
        if clock.spent():
            clock.cut = "the time budget ran out: some buckets holding NaN/Inf show no range"
            break
        picked = [i for i in group if i < whole]
        parts = []
        if picked:
            parts.append((ops.index(picked, highs), xf[: whole * k].reshape(whole, k)[ops.index(picked, highs)]))
        if whole in group:  # the ragged last bucket
            parts.append((ops.index([whole], highs), xf[whole * k :][None]))
        for where, values in parts:
            finite = np.isfinite(values)
            highs[where] = ops.double(ops.reduce(np.where(finite, values, -math.inf), "max", 1))
            lows[where] = ops.double(ops.reduce(np.where(finite, values, math.inf), "min", 1))
    host_highs, host_lows, host_marks = ops.tolist(ops.cat([highs[None], lows[None], marks[None]], 0))
    return {
        "points": out,
        "bucket": k,
        "length": n,
        "marks": [int(m) for m in host_marks],
        "min": [_number(v) for v in host_lows],
        "max": [_number(v) for v in host_highs],
    }


def _image_layout(shape: list[int]) -> str | None:
    if len(shape) == 3 and shape[0] in (1, 3, 4):
        return "CHW"
    if len(shape) == 3 and shape[-1] in (1, 3, 4):
        return "HWC"
    if len(shape) == 4 and shape[1] in (1, 3, 4):
        return "BCHW"
    return None


IMAGES_PER_POOL = 4  # images pooled together between two looks at the clock
CAREFUL_ELEMENTS = 1 << 22  # blocks or buckets holding NaN/Inf are read again this many elements at a time


def _images(ops: Any, x: Any, layout: str, normalize: str, clock: _Clock) -> dict[str, Any]:
    """Images as channel planes pooled to ``MAX_SIDE``, normalized to [0, 1] per channel or over all channels; the
    first MAX_IMAGES of a batch, a few at a time while the time budget lasts."""
    batch = x[None] if layout != "BCHW" else x
    if layout == "HWC":
        batch = ops.moveaxis(batch, 3, 1)
    total = int(batch.shape[0])
    side = MAX_SIDE if total == 1 else max(32, MAX_SIDE // 4)
    channels_per_image = int(batch.shape[1])
    images: list[dict[str, Any]] = []
    with contextlib.suppress(StopIteration):
        for start in range(0, min(total, MAX_IMAGES), IMAGES_PER_POOL):
            if images and clock.spent():
                raise StopIteration
            group = ops.as_float(batch[start : min(start + IMAGES_PER_POOL, total, MAX_IMAGES)])
            pooled = _pool(ops, group, side, side, clock)
            for i in range(len(pooled) // channels_per_image):
                images.append({"channels": pooled[i * channels_per_image : (i + 1) * channels_per_image]})
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
