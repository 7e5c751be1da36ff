"""Training scalars and histograms read from the optimizer, without touching the program's state.

Called by ``tensorsight.agent.measurement.pipeline``: ``before_step`` runs in the optimizer's step pre-hook
(gradients are
final, parameters not yet updated) and computes every gradient norm in one fused pass (``torch._foreach_norm``, one
host transfer for all of them); ``values`` assembles the ``scalars`` event (loss, lr, total and per-parameter
gradient norms); ``histograms`` computes weight and gradient histograms from a deterministic strided sample (never
the global RNG). All tensor work runs under ``torch.no_grad()`` on detached views: no graph, no in-place write, no
``_version`` bump.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from tensorsight.agent.runtime.guard import never_raise, report_once

HISTOGRAM_BINS = 30
HISTOGRAM_MAX_SAMPLES = 1 << 14  # plenty for 30 buckets; keeps a histogram well under a millisecond


def learning_rate(optimizer: Any) -> float | None:
    """The first param group's learning rate (a float even when the optimizer stores a tensor)."""
    try:
        return float(optimizer.param_groups[0]["lr"])
    except Exception:  # noqa: BLE001 - optimizers without lr (custom ones) simply have none
        return None


class ScalarRecorder:
    """Gradient norms per step and parameter names for the models the phase clock saw."""

    def __init__(self, torch: Any, models: Any, per_parameter: bool = True) -> None:
        self._torch = torch
        self._models = models  # callable -> list of top-level modules (the phase clock's)
        self.per_parameter = per_parameter
        self._names: dict[int, str] = {}
        self._order: dict[int, int] = {}
        self._known_models: list[int] = []
        self.total_norm: float | None = None
        self.norms: dict[str, float] = {}
        self.early_layer: tuple[str, float] | None = None
        self.late_layer: tuple[str, float] | None = None

    # ------------------------------------------------------------------------------------------- parameter names
    def _refresh_names(self) -> None:
        models = list(self._models())
        ids = [id(m) for m in models]
        if ids == self._known_models:
            return
        self._known_models = ids
        self._names.clear()
        self._order.clear()
        for index, model in enumerate(models):
            prefix = "" if index == 0 else f"{type(model).__name__}{index}."
            for name, param in model.named_parameters():
                self._names.setdefault(id(param), prefix + name)
                self._order.setdefault(id(param), len(self._order))

    def name_of(self, param: Any, fallback: str) -> str:
        return self._names.get(id(param), fallback)

    def named_parameters(self) -> Iterable[tuple[str, Any]]:
        """Named parameters of every model seen in training (for histograms)."""
        self._refresh_names()
        for index, model in enumerate(self._models()):
            prefix = "" if index == 0 else f"{type(model).__name__}{index}."
            for name, param in model.named_parameters():
                yield prefix + name, param

    # ---------------------------------------------------------------------------------------------- grad norms
    @never_raise()
    def before_step(self, optimizer: Any) -> None:
        """Norms of the gradients the optimizer is about to apply (total and per parameter)."""
        torch = self._torch
        self._refresh_names()
        params: list[Any] = []
        grads: list[Any] = []
        for group in optimizer.param_groups:
            for param in group["params"]:
                grad = getattr(param, "grad", None)
                if grad is None:
                    continue
                if grad.layout != torch.strided or grad.is_meta or grad.is_quantized:
                    report_once("grad-norm-layout", "gradient norms skip sparse, meta and quantized gradients")
                    continue
                params.append(param)
                grads.append(grad)
        self.norms = {}
        self.total_norm = None
        self.early_layer = self.late_layer = None
        if not grads:
            return
        with torch.no_grad():
            values = self._norm_values(grads)
        self.total_norm = math.sqrt(sum(v * v for v in values)) if all(math.isfinite(v) for v in values) else math.inf
        if any(math.isnan(v) for v in values):
            self.total_norm = math.nan
        named = [
            (self.name_of(p, f"param{i}"), self._order.get(id(p), 1 << 30), p.dim(), v)
            for i, (p, v) in enumerate(zip(params, values, strict=True))
        ]
        if self.per_parameter:
            self.norms = {name: value for name, _, _, value in named}
        layers = sorted((order, name, value) for name, order, dim, value in named if dim >= 2)
        if len(layers) >= 2:
            self.early_layer = (layers[0][1], layers[0][2])
            self.late_layer = (layers[-1][1], layers[-1][2])

    def _norm_values(self, grads: list[Any]) -> list[float]:
        torch = self._torch
        foreach_norm = getattr(torch, "_foreach_norm", None)
        norms = foreach_norm(grads) if foreach_norm is not None else [torch.linalg.vector_norm(g) for g in grads]
        by_device: dict[Any, list[int]] = {}
        for index, norm in enumerate(norms):
            by_device.setdefault(norm.device, []).append(index)
        values = [0.0] * len(norms)
        for indices in by_device.values():
            # one stacked transfer per device instead of one .item() per parameter (a cast per norm only when the
            # norms have several dtypes: fp16 and fp32 parameters)
            group = [norms[i] for i in indices]
            if any(norm.dtype != group[0].dtype for norm in group):
                group = [norm.to(torch.float32) for norm in group]
            stacked = torch.stack(group).to(torch.float32).tolist()
            for index, value in zip(indices, stacked, strict=True):
                values[index] = float(value)
        return values

    def values(self, loss: float | None, lr: float | None) -> dict[str, float]:
        """The ``scalars`` event's values for this step."""
        out: dict[str, float] = {}
        if loss is not None:
            out["loss"] = loss
        if lr is not None:
            out["lr"] = lr
        if self.total_norm is not None:
            out["grad_norm"] = self.total_norm
        for name, value in self.norms.items():
            out[f"grad_norm/{name}"] = value
        return out

    # ---------------------------------------------------------------------------------------------- histograms
    @never_raise(fallback=[])
    def histograms(self) -> list[dict[str, Any]]:
        """Weight and gradient histograms of every named parameter: ``{name, kind, edges, counts, stats}``."""
        out: list[dict[str, Any]] = []
        for name, param in self.named_parameters():
            for kind, tensor in (("weight", param), ("grad", getattr(param, "grad", None))):
                if tensor is None:
                    continue
                histogram = histogram_of(self._torch, tensor)
                if histogram is not None:
                    out.append({"name": name, "kind": kind, **histogram})
        return out


def histogram_of(torch: Any, tensor: Any, bins: int = HISTOGRAM_BINS) -> dict[str, Any] | None:
    """Bucket edges/counts and summary stats of a tensor's finite values, with the sample's NaN, +Inf and -Inf counts
    (``nonfinite``), from a strided sample of at most ``HISTOGRAM_MAX_SAMPLES`` elements; None for tensors without
    plain real values (sparse, meta, complex, empty). A tensor with no finite value at all (the weights of a run whose
    loss went NaN) still has a histogram: no buckets, its non-finite counts, so the panel says so instead of waiting.

    Cheap by construction: a finite sum proves there is no NaN/Inf, so the boolean mask (slow) is built only for a
    sample that holds some; counts come from ``bincount`` over bucket indices (``histc`` is several times slower).
    """
    if tensor.layout != torch.strided or tensor.is_meta or tensor.is_quantized or tensor.is_complex():
        return None
    if tensor.numel() == 0:
        return None
    with torch.no_grad():
        flat = tensor.detach().reshape(-1)
        stride = max(1, math.ceil(flat.numel() / HISTOGRAM_MAX_SAMPLES))
        sample = flat[::stride].to(device="cpu", dtype=torch.float32).contiguous()
        total = float(sample.sum())
        nonfinite = {"nan": 0, "posinf": 0, "neginf": 0}
        if not math.isfinite(total):
            finite = torch.isfinite(sample)
            nan = int(torch.isnan(sample).sum())
            positive = int((sample == math.inf).sum())
            nonfinite = {"nan": nan, "posinf": positive, "neginf": sample.numel() - int(finite.sum()) - nan - positive}
            sample = sample[finite]
            if sample.numel() == 0:
                return {"edges": [], "counts": [], "stats": {}, "sampled_every": stride, "nonfinite": nonfinite}
            total = float(sample.sum())
        low, high = (float(v) for v in torch.aminmax(sample))
        top = high if high > low else low + max(abs(low) * 1e-6, 1e-12)
        scale = bins / (top - low)
        buckets = sample.sub(low).mul_(scale).to(torch.int64).clamp_(0, bins - 1)
        counts = [float(c) for c in torch.bincount(buckets, minlength=bins).tolist()]
        squares = float(torch.dot(sample, sample))
    width = (top - low) / bins
    edges = [low + width * i for i in range(bins)] + [top]
    stats = {"min": low, "max": high, "num": float(sample.numel()), "sum": total, "sum_squares": squares}
    return {"edges": edges, "counts": counts, "stats": stats, "sampled_every": stride, "nonfinite": nonfinite}
