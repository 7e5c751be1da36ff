"""What the debugger shows for tensors, arrays, modules, optimizers and data loaders.

Called by the pydevd plugin (``pydevd_plugins/extensions/pydevd_plugin_tensorsight.py``) for the Variables view,
hover, watch, repl and clipboard, and by users as ``tensorsight.summarize(value)``. It gathers facts from the live
object and hands them to the pure grammar in ``core.summary``; the figures come from ``core.stats`` through one
cache keyed on each tensor's ``_version``.

What the debugger asks for (``present``, ``child_entries``) runs under the request clock of ``display.budget``
(a direct ``summarize`` call outside a request has no time limit): pydevd gives a whole Variables request 3 s, so a
summary that would not fit in what is left of it does less and says so: figures from a strided sample (``≈``,
"sampled"), no figures yet ("figures on expand"), or a module scan that stopped part-way ("scanned 2.1K of 10K
tensors for NaN/Inf"); an expanded module lists its first 500 members. Expanding the value is a new request, with
a new budget, and shows the rest.

Good-guest rules kept here: stdlib only at import, torch/numpy used only when the program already imported them
(``can_present`` looks at ``sys.modules`` and never imports); reads only (``torch.no_grad``, detached views, no
user ``__torch_function__``); never evaluates ``.T``/``.mT``/``.H`` or anything that copies data unasked (those
appear as placeholders with the expression to evaluate); nothing raises out of the public functions.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import keyword
import math
import operator
import reprlib
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from tensorsight.agent.display.budget import CLOCK
from tensorsight.agent.runtime.guard import report_once
from tensorsight.core.notation import format_bytes, shape_text, short_dtype
from tensorsight.core.stats import (
    DEFAULT_BUDGET,
    SUMMARY_PASSES,
    Stats,
    StatsBudget,
    StatsCache,
    elements_to_read,
    plain_tensors,
    unavailable,
)
from tensorsight.core.summary import (
    SMALL,
    DatasetFacts,
    LoaderFacts,
    ModuleFacts,
    OptimizerFacts,
    TensorFacts,
    dataset_line,
    format_count,
    format_number,
    loader_line,
    module_line,
    optimizer_line,
    tensor_line,
)

CACHE = StatsCache(capacity=4096)  # grows (``reserve``) to the parameters and grads of the modules in view
MODULE_SCAN_ELEMENTS = 1 << 29  # a module whose parameters exceed this is not scanned for NaN/Inf (budget)
MAX_MODULE_MEMBERS = 500  # children listed when a module is expanded (pydevd lists 500 items of a container)
MODULE_SCAN_BATCH = 512  # parameters whose norms one fused kernel computes between two looks at the clock
ALWAYS_EXACT_ELEMENTS = 1 << 16  # a reduction this small costs less than the summary around it: never deferred
DEFERRED_NOTE = "figures on expand: this view's time budget is spent"
ONE_PASS = replace(DEFAULT_BUDGET, spread=False)  # what a line affords for a huge tensor: the alarm and the mean
VALUE_ROWS = 8  # rows (or 10-element slices) listed under "values"
VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "real", "imag"})  # each builds a new tensor/array: not evaluated
SKIPPED_ATTRIBUTES = frozenset({"volatile"})  # removed from torch: reading it only emits a warning

Entry = tuple[str, Any, Any]  # (name, value, evaluate-name suffix or callable or None), pydevd's DAP child triple


class Info(str):
    """A computed, read-only fact shown as plain text (no quotes, not expandable)."""


class Group:
    """An expandable row of computed children (stats, values, raw attributes), built only when expanded."""

    def __init__(self, label: str, build: Callable[[], list[Entry]]) -> None:
        self.label = label
        self._build = build

    def entries(self) -> list[Entry]:
        try:
            with _quiet_torch():
                return self._build()
        except Exception as exc:  # noqa: BLE001 - e.g. a tensor subclass whose every operation raises
            return [("error", Info(f"could not list: {_short_error(exc)}"), None)]

    def __repr__(self) -> str:
        return self.label


# ---- what we present -----------------------------------------------------------------------------------------------


def _kind_of_type(type_object: Any) -> str | None:
    """``tensor``, ``array``, ``module``, ``optimizer``, ``loader``, ``dataset``, ``info``, ``group``, ``record`` (our
    own records, e.g. the sentinel's ``(nonfinite)`` entry) or None; imports nothing."""
    if not isinstance(type_object, type):
        return None
    if issubclass(type_object, Info):
        return "info"
    if issubclass(type_object, Group):
        return "group"
    if callable(type_object.__dict__.get("__tensorsight_rows__")):
        return "record"
    torch = sys.modules.get("torch")
    if torch is not None:
        tensor_type = getattr(torch, "Tensor", None)
        if isinstance(tensor_type, type) and issubclass(type_object, tensor_type):
            return "tensor"
        for module_name, class_name, kind in (
            ("torch.nn.modules.module", "Module", "module"),
            ("torch.optim.optimizer", "Optimizer", "optimizer"),
            ("torch.utils.data.dataloader", "DataLoader", "loader"),
            ("torch.utils.data.dataset", "Dataset", "dataset"),
        ):
            cls = getattr(sys.modules.get(module_name), class_name, None)
            if isinstance(cls, type) and issubclass(type_object, cls):
                return kind
    np = sys.modules.get("numpy")
    if np is not None:
        ndarray = getattr(np, "ndarray", None)
        if isinstance(ndarray, type) and issubclass(type_object, ndarray):
            return "array"
    return None


def can_present(type_object: Any, type_name: str = "") -> bool:
    """Whether we give the one-line value of this type (pydevd caches the answer per type)."""
    try:
        return _kind_of_type(type_object) is not None
    except Exception:  # noqa: BLE001 - a hostile metaclass must not break the debugger
        return False


def can_expand(type_object: Any, type_name: str = "") -> bool:
    """Whether we give the children of this type: everything we present except plain-text facts, and datasets,
    whose own attributes (pydevd's listing) are what a user expands one for."""
    try:
        return _kind_of_type(type_object) not in (None, "info", "dataset")
    except Exception:  # noqa: BLE001
        return False


def _kind(value: Any) -> str | None:
    try:
        return _kind_of_type(type(value))
    except Exception:  # noqa: BLE001
        return None


# ---- one-line values ---------------------------------------------------------------------------------------------


def present(value: Any, context: str = "variables") -> str:
    """The value text for a debugger context: variables, hover, watch, repl, or clipboard (line + full repr)."""
    with CLOCK.call():
        return _present(value, context)


def _present(value: Any, context: str) -> str:
    line = summarize(value)
    if context != "clipboard" or _kind(value) in ("info", "group"):
        return line
    try:
        with _quiet_torch():
            full = repr(value)
    except Exception as exc:  # noqa: BLE001
        return f"{line}\n(repr failed: {_short_error(exc)})"
    return f"{line}\n{full}"


def summarize(value: Any) -> str:
    """One line that says what a tensor, array, module, optimizer or data loader holds; never raises."""
    kind = _kind(value)
    try:
        with _quiet_torch():
            return _summary_line(value, kind)
    except Exception as exc:  # noqa: BLE001 - the debugger must always get a line
        report_once(f"summarize-{type(value).__name__}", f"could not summarise a {type(value).__name__}: {exc!r}")
        return f"{_type_name(value)} (TensorSight could not summarise it: {_short_error(exc)})"


def _summary_line(value: Any, kind: str | None) -> str:
    if kind == "info":
        return str.__str__(value)
    if kind in ("group", "record"):
        return str(value.label) if kind == "group" else repr(value)
    if kind == "tensor":
        return tensor_line(tensor_facts(value))
    if kind == "array":
        return tensor_line(array_facts(value))
    if kind == "module":
        return module_line(module_facts(value))
    if kind == "optimizer":
        return optimizer_line(optimizer_facts(value))
    if kind == "loader":
        return loader_line(loader_facts(value))
    if kind == "dataset":
        return dataset_line(dataset_facts(value))
    return _plain(value)


def _plain(value: Any) -> str:
    try:
        return f"{_type_name(value)}: {reprlib.repr(value)}"
    except Exception as exc:  # noqa: BLE001
        return f"{_type_name(value)} (repr failed: {_short_error(exc)})"


def _type_name(value: Any) -> str:
    try:
        return type(value).__name__
    except Exception:  # noqa: BLE001
        return "object"


def _short_error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = text if len(text) <= 80 else text[:79] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextlib.contextmanager
def _quiet_torch() -> Iterator[None]:
    """No autograd recording and no ``__torch_function__`` (a user subclass's, or any mode's: see
    ``core.stats.plain_tensors``) while we look at tensors (both thread-local)."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    with torch.no_grad(), plain_tensors(torch):
        yield


def safe_stats(value: Any, *, zeros: bool = False, glance: bool = True) -> Stats:
    """Cached stats of a tensor/array, within the request's time budget; a failure becomes Stats that say why.

    Inside a debugger request, by what the tensor's elements cost at the speed the clock has measured: exact figures
    when they fit the line's glance budget (``glance=False``, the expanded "stats" row: the value's whole budget);
    else, when one pass fits what is left, what it finds: exact NaN/Inf counts and the mean, σ and the range left to
    the expand (``Stats.complete`` False); else a marked estimate from a strided sample; and no figures at all
    ("figures on expand") once the budget is spent and nothing is cached. Small tensors always get their exact
    figures: they cost the bookkeeping around them, which doing less would not save. Never raises.
    """
    try:
        cached = CACHE.cached(value, DEFAULT_BUDGET)
        if cached is not None and (not zeros or cached.zeros is not None or not cached.has_values):
            return cached
        cost = elements_to_read(value)
        affordable = CLOCK.affordable_elements()
        budget = DEFAULT_BUDGET
        passes = SUMMARY_PASSES
        if glance and cost > max(CLOCK.glance_elements(), ALWAYS_EXACT_ELEMENTS):
            if cost <= affordable * SUMMARY_PASSES and not zeros:
                budget, passes = ONE_PASS, 1
                partial = CACHE.cached(value, ONE_PASS)
                if partial is not None:
                    return partial
        if passes == SUMMARY_PASSES and cost > max(affordable, ALWAYS_EXACT_ELEMENTS):
            if CLOCK.remaining() <= 0:
                return unavailable(_numel(value), DEFERRED_NOTE)
            budget = _budget_within(affordable)
        start = time.perf_counter()
        result = CACHE.stats(value, budget, zeros=zeros)
        if result is not None:  # the clock's speed is a whole summary's: a one-pass line read a third as much
            CLOCK.learn(result.counted * passes // SUMMARY_PASSES, time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001
        return unavailable(_numel(value), f"stats unavailable: {_short_error(exc)}")
    return result if result is not None else unavailable(_numel(value), "not a tensor")


def _budget_within(affordable: int) -> StatsBudget:
    """A budget that summarises from a strided sample small enough for the time left (at least 64K elements)."""
    sample = max(1 << 16, min(DEFAULT_BUDGET.sample_elements, affordable // 2))
    return StatsBudget(exact_elements=min(DEFAULT_BUDGET.exact_elements, affordable), sample_elements=sample)


def _numel(value: Any) -> int:
    try:
        return int(value.numel()) if callable(getattr(value, "numel", None)) else int(value.size)
    except Exception:  # noqa: BLE001
        return 0


# ---- tensors -----------------------------------------------------------------------------------------------------


def tensor_facts(t: Any) -> TensorFacts:
    """Everything a tensor line says, read without changing the tensor."""
    torch = sys.modules["torch"]
    with _quiet_torch():
        dtype = short_dtype(t.dtype)
        try:
            shape: tuple[int, ...] | None = tuple(int(d) for d in t.shape)
        except Exception:  # noqa: BLE001 - nested or uninitialised tensors have no single shape
            shape = None
        where = str(t.device)
        tags = _tensor_tags(torch, t)
        if _uninitialised(torch, t):
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


def _uninitialised(torch: Any, t: Any) -> bool:
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


# ---- modules, optimizers, data loaders ---------------------------------------------------------------------------


def module_facts(module: Any, glance: bool = True) -> ModuleFacts:
    """Parameter counts, devices, dtypes, mode, NaN/Inf in weights or grads, total grad norm of an nn.Module.

    The counts, devices, dtypes and mode are cheap facts, always there; the NaN/Inf scan of the parameters and
    grads stops at the line's glance budget (``glance=False``, an expand: the request's), resumed by the next view.
    """
    torch = sys.modules["torch"]
    with _quiet_torch():
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
                if type(p) not in plain and _uninitialised(torch, p):
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
    ``no_grad`` (the caller's ``_quiet_torch``), so the norms record no graph.
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


def _scalar(value: Any) -> Any:
    """Hyperparameters may be 0-d tensors (capturable optimizers): show them as numbers."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor) and value.numel() == 1:
        with _quiet_torch():
            return value.item()
    if isinstance(value, (tuple, list)):
        return type(value)(_scalar(v) for v in value)
    return value


def optimizer_step(optimizer: Any) -> int | None:
    """Completed steps: the ``step`` an optimizer keeps in its state (Adam, RMSprop...), else our step hook's count."""
    try:
        for state in optimizer.state.values():
            if isinstance(state, dict) and "step" in state:
                return int(_scalar(state["step"]))
    except Exception:  # noqa: BLE001
        pass
    steps = sys.modules.get("tensorsight.agent.runtime.steps")
    counter = getattr(steps, "step_count", None)
    if callable(counter):
        with contextlib.suppress(Exception):
            count = counter(optimizer)
            if count is not None:
                return int(count)
    try:
        if optimizer.state:
            return None  # state without a step counter (SGD's momentum buffers): the count is not kept
        stateless = type(optimizer).__name__ == "SGD" and all(not g.get("momentum") for g in optimizer.param_groups)
        return None if stateless else 0  # the others create their state on the first step
    except Exception:  # noqa: BLE001
        return None


def optimizer_facts(optimizer: Any) -> OptimizerFacts:
    groups = []
    tensors = 0
    for group in optimizer.param_groups:
        tensors += len(group.get("params", ()))
        groups.append({k: _scalar(v) for k, v in group.items() if k != "params"})
    return OptimizerFacts(
        name=type(optimizer).__name__, groups=tuple(groups), step=optimizer_step(optimizer), tensors=tensors
    )


def _loader_shuffle(loader: Any) -> tuple[bool | None, str | None]:
    data = sys.modules.get("torch.utils.data")
    sampler = getattr(loader, "sampler", None)
    if loader.batch_size is None and getattr(loader, "batch_sampler", None) is not None:
        sampler = loader.batch_sampler
    name = type(sampler).__name__ if sampler is not None else None
    if data is not None:
        if isinstance(sampler, data.RandomSampler):
            return True, name
        if isinstance(sampler, data.SequentialSampler):
            return False, name
    shuffle = getattr(sampler, "shuffle", None)
    return (shuffle if isinstance(shuffle, bool) else None), name


def _length(value: Any) -> int | None:
    try:
        return len(value)
    except Exception:  # noqa: BLE001 - iterable datasets have no length
        return None


def dataset_facts(dataset: Any) -> DatasetFacts:
    """A dataset's class and length; the per-sample shapes of a ``TensorDataset`` (read from its tensors, never by
    indexing: ``__getitem__`` is user code) and what a ``Subset`` picks from."""
    name = _type_name(dataset)
    data = sys.modules.get("torch.utils.data")
    length = _length(dataset) if callable(getattr(type(dataset), "__len__", None)) else None
    if data is not None and isinstance(dataset, data.TensorDataset):
        tensors = getattr(dataset, "tensors", ())
        samples = tuple(_sample_text(t) for t in tensors[:MAX_DATASET_FIELDS])
        return DatasetFacts(name, length, samples + (("…",) if len(tensors) > MAX_DATASET_FIELDS else ()))
    if data is not None and isinstance(dataset, data.Subset):
        base = dataset.dataset
        base_length = _length(base) if callable(getattr(type(base), "__len__", None)) else None
        return DatasetFacts(name, _length(dataset.indices), of=_type_name(base), of_length=base_length)
    return DatasetFacts(name, length)


MAX_DATASET_FIELDS = 4  # a TensorDataset line names the sample shapes of its first tensors only


def _sample_text(tensor: Any) -> str:
    """``f32[1, 28, 28]``: dtype and shape of one sample of a TensorDataset's tensor (its first dimension dropped)."""
    return f"{short_dtype(tensor.dtype)}[{', '.join(str(int(d)) for d in tuple(tensor.shape)[1:])}]"


def loader_facts(loader: Any) -> LoaderFacts:
    shuffle, sampler = _loader_shuffle(loader)
    dataset_len = _length(loader.dataset)
    return LoaderFacts(
        batch_size=loader.batch_size,
        num_workers=int(loader.num_workers),
        shuffle=shuffle,
        drop_last=bool(loader.drop_last),
        dataset_len=dataset_len,
        batches=_length(loader) if dataset_len is not None else None,
        sampler=sampler,
    )


# ---- children ----------------------------------------------------------------------------------------------------


def children(value: Any) -> dict[str, Any]:
    """Curated children by name, in display order (pydevd's ``get_dictionary``)."""
    return {name: child for name, child, _ in child_entries(value)}


def resolve_child(value: Any, key: str) -> Any:
    """One child by name (pydevd's ``resolve``); None when there is no such child."""
    for name, child, _ in child_entries(value):
        if name == key:
            return child
    return None


def child_entries(value: Any) -> list[Entry]:
    """``(name, value, evaluate-name suffix)`` triples in display order; never raises."""
    kind = _kind(value)
    try:
        with CLOCK.call(), _quiet_torch():
            return _child_entries(value, kind)
    except Exception as exc:  # noqa: BLE001
        report_once(f"children-{type(value).__name__}", f"could not list children of a {type(value).__name__}: {exc!r}")
        return [("error", Info(f"TensorSight could not list children: {_short_error(exc)}"), None)]


def _child_entries(value: Any, kind: str | None) -> list[Entry]:
    if kind == "group":
        return list(value.entries())
    if kind == "record":
        return _record_children(value)
    if kind == "tensor":
        return _tensor_children(value)
    if kind == "array":
        return _array_children(value)
    if kind == "module":
        return _module_children(value)
    if kind == "optimizer":
        return _optimizer_children(value)
    if kind == "loader":
        return _loader_children(value)
    return []


def _stats_group(value: Any) -> Group:
    stats = safe_stats(value, glance=False)  # the rest of what the line left out: the value's whole budget
    if stats.has_values and stats.finite:
        approx = "" if stats.exact else "≈"
        label = (
            f"min={format_number(stats.min)} max={format_number(stats.max)} mean{approx}={format_number(stats.mean)}"
        )
        if stats.std is not None:
            label += f" std{approx}={format_number(stats.std)}"
    elif stats.has_values:
        label = "no finite values" if stats.numel else "empty"
    else:
        label = stats.note or "no values"
    return Group(label, lambda: _stats_entries(value))


def _stats_entries(value: Any) -> list[Entry]:
    stats = safe_stats(value, zeros=True, glance=False)
    if not stats.has_values:
        return [("note", Info(stats.note or "no values"), None)]
    missing = Info("n/a (no finite values)")

    def figure(x: Any) -> Any:
        return missing if x is None else x

    entries: list[Entry] = [
        ("min", figure(stats.min), None),
        ("max", figure(stats.max), None),
        ("mean", figure(stats.mean), None),
        ("std", figure(stats.std), None),
        ("nan", stats.nan, None),
        ("+inf" if stats.inf_signed else "inf", stats.posinf, None),
    ]
    if stats.inf_signed:
        entries.append(("-inf", stats.neginf, None))
    entries += [
        ("zeros", stats.zeros if stats.zeros is not None else Info("not counted"), None),
        ("finite", stats.finite, None),
        ("sum", figure(stats.total), None),
        ("norm", figure(stats.norm), None),
    ]
    if stats.exact:
        entries.append(("exact", True, None))
    else:
        entries.append(("exact", Info(f"no: estimated from {format_count(stats.counted)} sampled elements"), None))
    return entries


def _tensor_memory(t: Any) -> Info:
    logical = int(t.numel()) * int(t.element_size())
    text = format_bytes(logical)
    try:
        stored = int(t.untyped_storage().nbytes())
    except Exception:  # noqa: BLE001 - sparse/meta/wrapper tensors have no plain storage
        return Info(text)
    if t.layout == sys.modules["torch"].strided:
        text += ", contiguous" if t.is_contiguous() else f", strides {tuple(t.stride())}"
    if stored > logical:
        text += f", a view into {format_bytes(stored)} of storage"
    elif stored < logical:
        text += f", {format_bytes(stored)} stored (expanded)"
    return Info(text)


def _tensor_children(t: Any) -> list[Entry]:
    torch = sys.modules["torch"]
    with _quiet_torch():
        entries: list[Entry] = [
            ("shape", _try(lambda: t.shape), ".shape"),
            ("dtype", t.dtype, ".dtype"),
            ("device", t.device, ".device"),
        ]
        has_shape = not isinstance(_try(lambda: tuple(t.shape)), Info)
        if has_shape:
            entries.append(("stats", _stats_group(t), None))
        entries.append(("memory", _try(lambda: _tensor_memory(t)), None))
        entries.append(("requires_grad", bool(t.requires_grad), ".requires_grad"))
        if t.is_leaf or t.retains_grad:
            entries.append(("grad", t.grad, ".grad"))
        else:
            entries.append(("grad", Info("not kept for a non-leaf tensor (call .retain_grad() before backward)"), None))
        entries.append(("grad_fn", t.grad_fn, ".grad_fn"))
        entries.append(("is_leaf", bool(t.is_leaf), ".is_leaf"))
        readable = has_shape and safe_stats(t).has_values  # no data (meta, fake, raising subclass): no value rows
        if readable and t.layout == torch.strided and t.dim() > 0 and t.numel() > 0:
            entries.append(("values", _values_group(t, lambda: t.detach()), ""))
        entries.append(("raw attributes", _raw_group(t, tensor=True), ""))
    return entries


def _array_children(a: Any) -> list[Entry]:
    entries: list[Entry] = [
        ("shape", a.shape, ".shape"),
        ("dtype", a.dtype, ".dtype"),
        ("stats", _stats_group(a), None),
    ]
    memory = format_bytes(int(a.nbytes))
    memory += ", contiguous" if a.flags.c_contiguous else f", strides {a.strides}"
    if a.base is not None:
        memory += ", a view"
    entries.append(("memory", Info(memory), None))
    if a.ndim > 0 and a.size > 0:
        entries.append(("values", _values_group(a, lambda: a), ""))
    entries.append(("raw attributes", _raw_group(a), ""))
    return entries


def _values_group(value: Any, view: Callable[[], Any]) -> Group:
    """Rows (or 10-element slices of a 1-D value), taken as views only when the group is expanded."""
    length = int(value.shape[0])
    one_dim = len(value.shape) == 1

    def build() -> list[Entry]:
        with _quiet_torch():
            data = view()
            entries: list[Entry] = []
            if one_dim:
                starts = list(range(0, min(length, 10 * VALUE_ROWS), 10))
                if starts and starts[-1] + 10 < length:
                    starts.append(max(starts[-1] + 10, length - 10))
                for start in starts:
                    stop = min(start + 10, length)
                    entries.append((f"[{start}:{stop}]", data[start:stop], f"[{start}:{stop}]"))
                return entries
            rows = list(range(min(length, VALUE_ROWS)))
            if length > VALUE_ROWS:
                rows.append(length - 1)
            return [(f"[{row}]", data[row], f"[{row}]") for row in rows]

    label = f"{length} elements in slices of 10" if one_dim else f"{length} rows along dim 0"
    return Group(label, build)


def _raw_group(value: Any, tensor: bool = False) -> Group:
    """Every data attribute, as stock debugpy lists them, minus the methods; copies are placeholders."""

    def build() -> list[Entry]:
        with _quiet_torch():
            return _raw_attributes(value, tensor)

    return Group("all attributes (unfiltered)", build)


def _raw_attributes(value: Any, tensor: bool) -> list[Entry]:
    names = set(dir(type(value)))
    with contextlib.suppress(Exception):
        names |= set(vars(value))
    non_leaf = False
    if tensor:
        with contextlib.suppress(Exception):
            non_leaf = not (value.is_leaf or value.retains_grad)
    entries: list[Entry] = []
    for name in sorted(names):
        if name.startswith("__") or name in SKIPPED_ATTRIBUTES:
            continue
        try:
            static = inspect.getattr_static(value, name)
        except AttributeError:
            continue
        if _is_method(static):
            continue
        suffix = _attribute_suffix(name)
        if name in VIEW_ATTRIBUTES:
            child: Any = Info(f"not evaluated: .{name} builds a new tensor from the data (evaluate it to see it)")
        elif tensor and non_leaf and name in ("grad", "_grad"):
            child = Info("None (not kept for a non-leaf tensor)")
        else:
            try:
                child = getattr(value, name)
            except Exception as exc:  # noqa: BLE001
                child = Info(f"raises {_short_error(exc)}")
        entries.append((name, child, suffix))
    return entries


def _is_method(static: Any) -> bool:
    if isinstance(static, (staticmethod, classmethod)):
        return True
    return inspect.isroutine(static) or type(static).__name__ in ("method_descriptor", "wrapper_descriptor")


def _attribute_suffix(name: str) -> str | None:
    return f".{name}" if name.isidentifier() and not keyword.iskeyword(name) else None


def _try(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001
        return Info(f"raises {_short_error(exc)}")


def _grad_norm_shown(facts: ModuleFacts) -> float | Info:
    """The module's ``(grad norm)`` row: a number, or why there is none, in words that never mistake "no backward
    yet" for NaN gradients (``tensorsight.grad_norm`` answers ``inf`` for the latter and no number for the former)."""
    if facts.nonfinite_grads:
        count = len(facts.nonfinite_grads)
        return Info(f"inf (NaN/Inf in {count} grad{'s' if count > 1 else ''})")
    if facts.grad_norm is not None:
        return facts.grad_norm
    if facts.note is not None:
        return Info("not computed (too many parameters)")
    return Info("no grads yet" if facts.trainable else "no trainable params")


def _module_children(module: Any) -> list[Entry]:
    facts = module_facts(module, glance=False)
    entries: list[Entry] = [
        ("(params)", facts.params, None),
        ("(trainable)", facts.trainable, None),
        ("(mode)", Info("train" if facts.training else "eval"), ".training"),
        ("(devices)", Info(", ".join(facts.devices) or "none"), None),
        ("(dtypes)", Info(", ".join(facts.dtypes) or "none"), None),
        ("(grad norm)", _grad_norm_shown(facts), None),
    ]
    if facts.nonfinite_params or facts.nonfinite_grads:
        bad = [*facts.nonfinite_params, *(f"{n}.grad" for n in facts.nonfinite_grads)]
        entries.append(("(NaN/Inf)", Info(", ".join(bad)), None))
    if facts.scanned is not None:
        done, total = facts.scanned
        note = f"{done:,} of {total:,} tensors scanned for NaN/Inf so far: the next view goes on from there"
        entries.append(("(scan)", Info(note), None))
    indexable = _is_indexable_container(module)
    members: list[Entry] = []
    for name, child in module.named_children():
        members.append((name, child, f"[{name}]" if indexable and name.isdigit() else _module_suffix(module, name)))
    for name, p in module.named_parameters(recurse=False):
        members.append((name, p, _attribute_suffix(name)))
    for name, b in module.named_buffers(recurse=False):
        members.append((name, b, _attribute_suffix(name)))
    entries += members[:MAX_MODULE_MEMBERS]
    if len(members) > MAX_MODULE_MEMBERS:
        rest = len(members) - MAX_MODULE_MEMBERS
        entries.append(
            ("(more)", Info(f"… {rest:,} more submodules/parameters/buffers: evaluate them by name to see one"), None)
        )
    entries.append(("raw attributes", _raw_group(module), ""))
    return entries


def _is_indexable_container(module: Any) -> bool:
    nn = sys.modules.get("torch.nn")
    return nn is not None and isinstance(module, (nn.Sequential, nn.ModuleList))


def _module_suffix(module: Any, name: str) -> str | None:
    nn = sys.modules.get("torch.nn")
    if nn is not None and isinstance(module, nn.ModuleDict):
        return f"[{name!r}]"
    return _attribute_suffix(name)


def _optimizer_children(optimizer: Any) -> list[Entry]:
    facts = optimizer_facts(optimizer)
    lrs = [group.get("lr") for group in facts.groups]
    entries: list[Entry] = [
        ("(lr)", lrs[0] if len(lrs) == 1 else lrs, None),
        ("(step)", facts.step if facts.step is not None else Info("unknown (this optimizer keeps no step)"), None),
        ("(tensors)", facts.tensors, None),
        ("(state)", Info(f"{_length(optimizer.state)} tensors with state"), None),
        ("param_groups", optimizer.param_groups, ".param_groups"),
        ("defaults", optimizer.defaults, ".defaults"),
        ("raw attributes", _raw_group(optimizer), ""),
    ]
    return entries


def _record_children(record: Any) -> list[Entry]:
    """The rows of one of our own records (``__tensorsight_rows__``: name, value), a tuple of tensors as one row that
    names their shapes and expands to them, instead of the tuple's repr with every value printed."""
    entries: list[Entry] = []
    for name, value in record.__tensorsight_rows__():
        if isinstance(value, tuple) and value and all(_kind(v) in ("tensor", "array") for v in value):
            shapes = ", ".join(_type_at_a_glance(v) for v in value[:4])
            noun = "tensor" if all(_kind(v) == "tensor" for v in value) else "array"
            label = f"{len(value)} {noun}{'s' if len(value) != 1 else ''}: {shapes}{', …' if len(value) > 4 else ''}"
            entries.append((name, Group(label, functools.partial(_tuple_entries, value, f".{name}")), None))
        else:
            entries.append((name, value, f".{name}"))
    return entries


def _type_at_a_glance(value: Any) -> str:
    """``f32[64, 8]``: the dtype and shape of a tensor or array, read without its values."""
    return shape_text(tuple(value.shape), value.dtype)


def _tuple_entries(values: tuple[Any, ...], suffix: str) -> list[Entry]:
    return [(str(index), value, f"{suffix}[{index}]") for index, value in enumerate(values)]


def _loader_children(loader: Any) -> list[Entry]:
    facts = loader_facts(loader)
    shuffle: Any = facts.shuffle if facts.shuffle is not None else Info(f"unknown (sampler {facts.sampler})")
    workers: Any = facts.num_workers
    if facts.num_workers == 0:
        workers = Info("0 (batches load in the main process: a likely bottleneck)")
    entries: list[Entry] = [
        ("batch_size", loader.batch_size, ".batch_size"),
        ("num_workers", workers, ".num_workers"),
        ("shuffle", shuffle, None),
        ("drop_last", bool(loader.drop_last), ".drop_last"),
        ("pin_memory", bool(loader.pin_memory), ".pin_memory"),
        ("(samples)", facts.dataset_len if facts.dataset_len is not None else Info("unknown (no len)"), None),
        ("(batches)", facts.batches if facts.batches is not None else Info("unknown"), None),
        ("dataset", loader.dataset, ".dataset"),
        ("sampler", loader.sampler, ".sampler"),
        ("batch_sampler", loader.batch_sampler, ".batch_sampler"),
        ("collate_fn", loader.collate_fn, ".collate_fn"),
        ("raw attributes", _raw_group(loader), ""),
    ]
    return entries
