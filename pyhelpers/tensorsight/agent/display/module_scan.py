"""An ``nn.Module``'s facts: parameter counts, devices, dtypes, mode, and a NaN/Inf scan of its weights and grads with
the total grad norm, done a batch of parameters at a time within the request's budget and resumed by the next view.

Called by ``presentation`` (the module's line) and ``children`` (its expanded rows).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import operator
import sys
import threading
import weakref
from typing import Any

from tensorsight.agent.display.budget import CLOCK
from tensorsight.agent.display.reading import CACHE, quiet_torch, safe_stats
from tensorsight.agent.display.tensor_facts import uninitialised
from tensorsight.core.notation import short_dtype
from tensorsight.core.summary import ModuleFacts, format_count

MODULE_SCAN_ELEMENTS = 1 << 29  # a module whose parameters exceed this is not scanned for NaN/Inf (budget)
MODULE_SCAN_BATCH = 512  # parameters whose norms one fused kernel computes between two looks at the clock


def module_facts(module: Any, glance: bool = True) -> ModuleFacts:
    """Parameter counts, devices, dtypes, mode, NaN/Inf in weights or grads, total grad norm of an nn.Module.

    The counts, devices, dtypes and mode are cheap facts, always there; the NaN/Inf scan of the parameters and
    grads stops at the line's glance budget (``glance=False``, an expand: the request's), resumed by the next view.
    """
    torch = sys.modules["torch"]
    with quiet_torch():
        named = list(module.named_parameters())
        buffers = [b for _, b in module.named_buffers()]
        params = trainable = 0
        devices: set[Any] = set()  # device and dtype objects, named once each at the end (10,000 params: 10 ms)
        raw_dtypes: set[Any] = set()
        note = None
        lazy = False
        sized: list[tuple[str, Any]] = []
        plain = {torch.Tensor, torch.nn.Parameter}
        tensors = [p for _, p in named]
        if set(map(type, tensors)) <= plain:
            # The common case read in bulk, through C-level map(): under the debugger every Python-level step per
            # parameter is traced, which makes a loop over 10,000 parameters several times slower than stock repr.
            sized = named
            sizes = list(map(torch.Tensor.numel, tensors))
            params = sum(sizes)
            trainable = sum(itertools.compress(sizes, map(_REQUIRES_GRAD, tensors)))
            devices.update(map(_DEVICE, tensors))
            raw_dtypes.update(map(_DTYPE, tensors))
        else:
            for name, p in named:
                if type(p) not in plain and uninitialised(torch, p):
                    lazy = True
                    continue
                n = int(p.numel())
                sized.append((name, p))
                params += n
                trainable += n if p.requires_grad else 0
                devices.add(p.device)
                raw_dtypes.add(p.dtype)
        for b in buffers:
            with contextlib.suppress(Exception):
                devices.add(b.device)
        dtypes = {short_dtype(d) for d in raw_dtypes}
        modes_differ = sum(1 for m in module.modules() if bool(m.training) != bool(module.training))
        bad_params: list[str] = []
        bad_grads: list[str] = []
        grad_sumsq: float | None = None
        scanned: tuple[int, int] | None = None
        if params <= MODULE_SCAN_ELEMENTS:
            CACHE.reserve(4 * len(sized))  # its parameters and grads are what an expand shows next
            scan = _module_scan(torch, module, sized, glance)
            bad_params, bad_grads, grad_sumsq = scan.bad_params, scan.bad_grads, scan.grad_sumsq
            if scan.scanned < len(sized):
                scanned = (scan.scanned, len(sized))
                grad_sumsq = None  # a norm over part of the grads would read as the whole
        else:
            note = f"over {format_count(MODULE_SCAN_ELEMENTS)} parameters: not scanned for NaN/Inf"
    return ModuleFacts(
        name=type(module).__name__,
        training=bool(module.training),
        modes_differ=modes_differ,
        params=params,
        trainable=trainable,
        devices=tuple(sorted({str(d) for d in devices})),
        dtypes=tuple(sorted(dtypes)),
        nonfinite_params=tuple(bad_params),
        nonfinite_grads=tuple(bad_grads),
        grad_norm=None if grad_sumsq is None else math.sqrt(grad_sumsq),
        lazy=lazy,
        note=note,
        scanned=scanned,
    )


class _Scan:
    """What a parameter scan found: non-finite weights and grads by name, Σ‖grad‖², and how far it got."""

    def __init__(self) -> None:
        self.bad_params: list[str] = []
        self.bad_grads: list[str] = []
        self.grad_sumsq: float | None = None
        self.scanned = 0


_SCANS: dict[int, tuple[weakref.ref[Any], tuple[Any, ...], _Scan]] = {}
_SCANS_KEPT = 64  # modules whose last scan is kept (a hover, then an expand, then the next pause's view)
_SCANS_LOCK = threading.Lock()


def _module_scan(torch: Any, module: Any, sized: list[tuple[str, Any]], glance: bool = True) -> _Scan:
    """The module's parameter scan, reused while no parameter or grad changed, resumed where a budget stopped it.

    The signature is each parameter's and grad's identity and ``_version`` (an in-place write or a new grad changes
    it), so a repeated hover costs one pass over the parameter list, not a scan.
    """
    tensors = [p for _, p in sized]
    grads = _grads(tensors)
    signature = (  # C-level map() throughout: no traced Python step per parameter
        tuple(map(id, tensors)),
        tuple(map(_VERSION, tensors)),
        tuple(map(id, grads)),
        tuple(map(_VERSION, filter(functools.partial(operator.is_not, None), grads))),
    )
    with _SCANS_LOCK:
        entry = _SCANS.get(id(module))
    previous = entry[2] if entry is not None and entry[0]() is module and entry[1] == signature else None
    if previous is not None and previous.scanned >= len(sized):
        return previous
    scan = _scan_parameters(torch, sized, grads, resume=previous, glance=glance)
    try:
        ref = weakref.ref(module)
    except TypeError:
        return scan
    with _SCANS_LOCK:
        _SCANS.pop(id(module), None)
        _SCANS[id(module)] = (ref, signature, scan)
        while len(_SCANS) > _SCANS_KEPT:
            del _SCANS[next(iter(_SCANS))]
    return scan


def _scan_parameters(
    torch: Any, sized: list[tuple[str, Any]], grads: list[Any], resume: _Scan | None = None, glance: bool = True
) -> _Scan:
    """NaN/Inf in weights and grads, and the total grad norm, a batch of parameters at a time until the budget ends.

    One fused ``_foreach_norm`` per batch (what ``clip_grad_norm_`` uses) instead of a summary per tensor: a
    non-finite norm is the cheap test, and only a tensor that fails it gets exact stats (a norm also overflows on
    large finite values). Exotic tensors (subclasses, sparse, quantized) get their stats one by one. ``resume``
    is an earlier partial scan of the same, unchanged parameters: it goes on from where that one stopped.
    """
    scan = _Scan()
    if resume is not None:
        scan.bad_params, scan.bad_grads = list(resume.bad_params), list(resume.bad_grads)
        scan.grad_sumsq, scan.scanned = resume.grad_sumsq, resume.scanned
    first = scan.scanned
    for start in range(first, len(sized), MODULE_SCAN_BATCH):
        left = CLOCK.glance_left() if glance else CLOCK.remaining()
        if start > first and left <= 0:  # one batch at least: every view makes progress
            break
        batch = sized[start : start + MODULE_SCAN_BATCH]
        batch_grads = grads[start : start + MODULE_SCAN_BATCH]
        scan.scanned += len(batch)
        weights_ok = _all_finite(torch, [p for _, p in batch])
        if weights_ok and all(map(operator.is_, batch_grads, itertools.repeat(None))):
            continue  # no grads (yet): the weights' norms said it all
        grads_sumsq = _finite_sumsq(torch, batch_grads)
        if weights_ok and grads_sumsq is not None:
            scan.grad_sumsq = (scan.grad_sumsq or 0.0) + grads_sumsq
            continue
        # something is not finite (or not plain): find out which, one tensor at a time
        weight_norms = _norms(torch, [p for _, p in batch])
        grad_norms = _norms(torch, batch_grads)
        for (name, p), grad, weight_norm, grad_norm in zip(batch, batch_grads, weight_norms, grad_norms, strict=True):
            if not _finite(weight_norm) and safe_stats(p).nonfinite:
                scan.bad_params.append(name)
            if grad is None:
                continue
            if grad_norm is not None and math.isfinite(grad_norm):
                scan.grad_sumsq = (scan.grad_sumsq or 0.0) + grad_norm**2
                continue
            grad_stats = safe_stats(grad)
            if grad_stats.nonfinite:
                scan.bad_grads.append(name)
            elif grad_stats.sumsq is not None:
                scan.grad_sumsq = (scan.grad_sumsq or 0.0) + grad_stats.sumsq
    return scan


def _fused_norms(torch: Any, tensors: list[Any]) -> Any | None:
    """The 2-norms of plain dense float tensors sharing one device and dtype, as one float64 tensor, from one fused
    kernel; None when the list is empty or mixed (then ``_norms`` goes one group or one tensor at a time)."""
    if not tensors or not set(map(type, tensors)) <= {torch.Tensor, torch.nn.Parameter}:
        return None
    if set(map(_LAYOUT, tensors)) != {torch.strided} or not all(map(torch.Tensor.is_floating_point, tensors)):
        return None
    if len(set(map(_DEVICE, tensors))) != 1 or len(set(map(_DTYPE, tensors))) != 1:
        return None
    foreach_norm = getattr(torch, "_foreach_norm", None)
    if foreach_norm is None:
        return None
    try:
        return torch.stack(list(foreach_norm(tensors))).double()
    except Exception:  # noqa: BLE001 - e.g. meta tensors: the one-by-one path says why
        return None


def _all_finite(torch: Any, tensors: list[Any]) -> bool | None:
    """Whether every tensor's norm is finite (one fused kernel); None when that cannot be told in one go."""
    norms = _fused_norms(torch, tensors)
    return None if norms is None else bool(torch.isfinite(norms).all())


def _finite_sumsq(torch: Any, tensors: list[Any]) -> float | None:
    """Σ‖t‖² when every tensor is present, plain and finite (one fused kernel); None otherwise."""
    norms = _fused_norms(torch, tensors)
    if norms is None:
        return None
    total = float(norms.square().sum())
    return total if math.isfinite(total) and bool(torch.isfinite(norms).all()) else None


_DEVICE, _DTYPE, _VERSION = operator.attrgetter("device"), operator.attrgetter("dtype"), operator.attrgetter("_version")
_LAYOUT = operator.attrgetter("layout")
_REQUIRES_GRAD, _GRAD = operator.attrgetter("requires_grad"), operator.attrgetter("grad")


def _grads(tensors: list[Any]) -> list[Any]:
    """Each tensor's ``.grad`` (None where it has none), in bulk; one by one, guarded, if any getter raises."""
    try:
        return list(map(_GRAD, tensors))
    except Exception:  # noqa: BLE001 - a subclass's grad property may raise
        return [_param_grad(p) for p in tensors]


def _param_grad(p: Any) -> Any:
    try:
        return p.grad
    except Exception:  # noqa: BLE001 - a subclass's grad property may raise
        return None


def _finite(norm: float | None) -> bool:
    return norm is not None and math.isfinite(norm)


def _norms(torch: Any, tensors: list[Any]) -> list[float | None]:
    """The 2-norm of each tensor (None for a tensor that is None), one fused kernel per device and dtype.

    Only plain strided float tensors go through the fused kernel (no subclass dispatch, no exotic layout); the
    others, and any group the kernel refuses (meta tensors), get their norm from their stats one by one. Runs under
    ``no_grad`` (the caller's ``quiet_torch``), so the norms record no graph.
    """
    result: list[float | None] = [None] * len(tensors)
    groups: dict[tuple[Any, Any], list[int]] = {}
    plain = (torch.Tensor, torch.nn.Parameter)
    strided = torch.strided
    for index, t in enumerate(tensors):
        if type(t) in plain and t.layout == strided and t.is_floating_point() and t.numel() > 0:
            groups.setdefault((t.device, t.dtype), []).append(index)
    foreach_norm = getattr(torch, "_foreach_norm", None)
    for indices in groups.values():
        members = [tensors[i] for i in indices]
        try:
            if foreach_norm is not None:
                norms = torch.stack(list(foreach_norm(members))).double().tolist()
            else:
                norms = torch.stack([torch.linalg.vector_norm(m) for m in members]).double().tolist()
        except Exception:  # noqa: BLE001 - leave them to the one-by-one stats
            continue
        for i, norm in zip(indices, norms, strict=True):
            result[i] = float(norm)
    for index, t in enumerate(tensors):
        if t is not None and result[index] is None:
            stats = safe_stats(t)
            if stats.nonfinite is not None and not stats.nonfinite and stats.norm is not None:
                result[index] = stats.norm
            elif stats.nonfinite:
                result[index] = math.inf
    return result
