"""Breakpoint predicates of the ``tensorsight`` builtin: ``tensorsight.nan(loss)``, ``grad_norm(model) > 1e3``...

debugpy evaluates a breakpoint condition on every hit and treats an exception as "false" (a NameError silently), so
a predicate that raises on odd input is a breakpoint that never fires. Every predicate here therefore never raises:
misuse (a string, an object array, a bad ``factor``) makes it return False (``grad_norm``: ``NO_NUMBER``, a NaN that is
falsy, so both a bare ``grad_norm(42)`` and every comparison with it are False; ``NO_GRADIENTS``, the same kind of
value, before any backward) and is reported once per call site,
visibly: a ``[tensorsight]`` line on stderr (the Debug Console) and a ``condition-error`` event (the editor, through
the hub).

A predicate never runs the user's ``__torch_function__`` (nor a torch-function mode): a tensor subclass could count the
calls, or answer ``sum`` with something that hides the NaN. Each predicate runs with torch functions disabled, so its
reductions reach the real values; ``__torch_dispatch__`` subclasses still compute, as they must to have values.

``x`` may be a tensor, a numpy array, a Python number, an ``nn.Module`` (its parameters, buffers and gradients), an
optimizer (its parameters and their gradients), or a list/tuple/dict/generator of these (``model.parameters()``).
Costs stay small next to a training step: one reduction per tensor and one device sync per call, never a per-element
``.item()`` or a full-size boolean mask (``agent.tensor_walk``, ``core.nonfinite``). Nothing here changes the
program: no autograd graph, no in-place write, no global RNG draw.

State (``spike``, ``changed``) is kept per call site: the user's file and line plus the position of the call in the
condition, so two breakpoints, or two calls in one condition, never share a running level.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any, TypeVar

from tensorsight.agent.runtime import events, identity, steps
from tensorsight.agent.runtime.guard import report_once
from tensorsight.agent.runtime.tensor_walk import (
    Gathered,
    exact_counts,
    gather,
    gradients_of,
    nonfinite_of,
    optimizer_parameters,
    suspects,
    type_name,
)
from tensorsight.agent.runtime.user_code import is_user_file
from tensorsight.agent.runtime.user_libs import is_module, is_optimizer, is_tensor, loaded_numpy, loaded_torch
from tensorsight.core import protocol
from tensorsight.core.l10n import t
from tensorsight.core.nonfinite import NONE_FOUND, NonFiniteCounts

F = TypeVar("F", bound=Callable[..., Any])

MAX_SITES = 1000  # call sites with state (spike, changed); the oldest are forgotten beyond this
DEFAULT_SPIKE_FACTOR = 3.0
DEFAULT_SPIKE_WARMUP = 5
SPIKE_SMOOTHING = 0.2  # weight of the newest value in the running level

_spike_levels: dict[tuple[Any, ...], tuple[int, float]] = {}
_fingerprints: dict[tuple[Any, ...], tuple[Any, ...]] = {}


def arm(origin: str = "debugger") -> None:
    """The predicates are plain functions reached through the builtin; under the debugger, a condition that cannot
    run (a typo, a syntax error) is also reported once, in words (``agent.debugger.conditions``)."""
    if origin == "debugger":
        from tensorsight.agent.debugger.conditions import watch_conditions

        watch_conditions()


# ---- reporting -------------------------------------------------------------------------------------------------------


def _call_site() -> tuple[tuple[Any, ...], str]:
    """A key for the call site of a predicate, and ``file:line`` of the user's line (the breakpoint's line).

    The caller is the first frame outside this module: either the user's own code, or the code debugpy compiled from
    a breakpoint condition (``<string>``), whose innermost user frame is the stopped line. The key adds the caller's
    instruction offset, so ``spike(a) or spike(b)`` in one condition keeps two levels.
    """
    caller: FrameType | None = sys._getframe(1)
    while caller is not None and caller.f_code.co_filename == __file__:
        caller = caller.f_back
    where = caller
    while where is not None and not _is_user_code(where.f_code):
        where = where.f_back
    if where is None:
        label = "?"
        anchor: tuple[Any, ...] = ()
    else:
        label = f"{os.path.basename(where.f_code.co_filename)}:{where.f_lineno}"
        anchor = (where.f_code.co_filename, where.f_lineno)
    if caller is None:
        return anchor, label
    return (*anchor, caller.f_code.co_filename, caller.f_lasti), label


_user_codes: dict[Any, bool] = {}


def _is_user_code(code: Any) -> bool:
    """``user_code.is_user_file`` for a code object, cached: conditions run on every breakpoint hit."""
    verdict = _user_codes.get(code)
    if verdict is None:
        verdict = is_user_file(code.co_filename)
        if len(_user_codes) < 100_000:
            _user_codes[code] = verdict
    return verdict


_reported_misuse: set[str] = set()


def _misuse(predicate: str, problem: str) -> None:
    """Report a misused predicate once per call site and problem: stderr (Debug Console) and the hub."""
    _, label = _call_site()
    expression = f"tensorsight.{predicate}(...)"
    key = f"condition:{predicate}:{label}:{problem}"
    if key in _reported_misuse:
        return
    if len(_reported_misuse) < 10 * MAX_SITES:
        _reported_misuse.add(key)
    message = t("{0} at {1}: {2}; the condition is False", expression, label, problem)
    report_once(key, message)
    events.send(protocol.ConditionErrorEvent(expression=expression, message=message, location=label))


class _NoNumber(float):
    """NaN that is falsy: every comparison with it is False (NaN) and so is the value itself (``__bool__``). Its repr
    says why there is no number, so ``tensorsight.grad_norm(model)`` in the Debug Console does not read as NaN
    gradients."""

    reason: str

    def __new__(cls, reason: str) -> _NoNumber:
        value = super().__new__(cls, "nan")
        value.reason = reason
        return value

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"nan ({self.reason})"


NO_NUMBER: float = _NoNumber("misused: see the [tensorsight] line")  # what a numeric predicate answers on misuse
# What ``grad_norm`` answers when no gradient exists yet (before the first backward, or after ``zero_grad(set_to_none=
# True)``): not 0.0, which would make ``grad_norm(model) < 1e-7`` ("vanishing gradients") stop before any backward.
NO_GRADIENTS: float = _NoNumber("no gradients yet")


def _predicate(fallback: Any) -> Callable[[F], F]:
    """Make a predicate total and invisible to the program's torch-function overrides: any exception (a device error,
    an iterator that raises) becomes ``fallback`` plus one visible report, instead of a breakpoint that silently never
    fires; no subclass ``__torch_function__`` or torch-function mode sees the predicate's own ops."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                with _torch_functions_off():
                    return fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - the contract: never raise into debugpy's condition eval
                _misuse(fn.__name__, t("failed ({0}: {1})", type(exc).__name__, exc))
                return fallback

        return wrapper  # type: ignore[return-value]

    return decorate


def _gathered(predicate: str, x: Any, with_grads: bool = True) -> Gathered | None:
    found = gather(x, with_grads=with_grads)
    if found.problems:
        _misuse(predicate, found.problems[0])
        return None
    return found


def _torch_functions_off() -> Any:
    """``torch._C.DisableTorchFunction()`` when torch is loaded: ops (and property reads) on a subclass then skip its
    ``__torch_function__`` and return plain tensors; the user's modes are skipped too, and restored on exit."""
    disable = getattr(getattr(loaded_torch(), "_C", None), "DisableTorchFunction", None)
    return disable() if disable is not None else contextlib.nullcontext()


# ---- NaN / Inf -------------------------------------------------------------------------------------------------------


def _counts(predicate: str, x: Any) -> NonFiniteCounts | None:
    """Exact NaN/Inf counts of whatever ``x`` stands for; a lone tensor (the usual ``loss``) takes a short path."""
    if is_tensor(x):
        return exact_counts([x]) if suspects([x]) else NONE_FOUND
    found = _gathered(predicate, x)
    return None if found is None else nonfinite_of(found)


@_predicate(False)
def nan(x: Any) -> bool:
    """True when ``x`` holds a NaN anywhere (a module: its parameters, buffers or gradients)."""
    counts = _counts("nan", x)
    return counts is not None and counts.nan > 0


@_predicate(False)
def inf(x: Any) -> bool:
    """True when ``x`` holds +Inf or -Inf anywhere."""
    counts = _counts("inf", x)
    return counts is not None and counts.posinf + counts.neginf > 0


@_predicate(False)
def nonfinite(x: Any) -> bool:
    """True when ``x`` holds a NaN or an Inf anywhere."""
    counts = _counts("nonfinite", x)
    return counts is not None and counts.total > 0


# ---- magnitudes ------------------------------------------------------------------------------------------------------


def _magnitude(predicate: str, x: Any) -> float | None:
    """One non-negative number that tracks how big ``x`` is: |x| for a scalar, the RMS of a tensor's elements, and a
    module's or optimizer's gradient norm. None (reported) when ``x`` is not something with a size."""
    if isinstance(x, bool):
        return float(x)
    if isinstance(x, (int, float)):
        return abs(float(x))
    if isinstance(x, complex):
        return abs(x)
    if is_module(x) or is_optimizer(x):
        return _grad_norm_of(gradients_of(x))
    if is_tensor(x) and x.numel() == 1 and x.layout == loaded_torch().strided and not x.is_meta:
        return abs(x.detach().reshape(()).item())  # a loss: one number, no reduction
    found = _gathered(predicate, x, with_grads=False)
    if found is None:
        return None
    if found.empty:
        _misuse(predicate, "there is no value to look at (empty or None)")
        return None
    torch = loaded_torch()
    squares = 0.0
    count = 0
    for number in found.numbers:
        squares += abs(number) ** 2
        count += 1
    with _no_grad():
        for t in found.tensors:
            if t.numel() == 0 or t.device.type == "meta" or t.layout != torch.strided:
                continue
            values = t.detach()
            if not (values.is_floating_point() or values.is_complex()):
                values = values.to(torch.float32)  # integer or bool tensor
            norm = float(torch.linalg.vector_norm(values))
            squares += norm * norm
            count += values.numel()
    np = loaded_numpy()
    for a in found.arrays:
        if a.size and np is not None and a.dtype.kind in "fciub":
            with np.errstate(all="ignore"):
                norm = float(np.linalg.norm(a.reshape(-1).astype(np.float64, copy=False)))
            squares += norm * norm
            count += a.size
    if count == 0:
        _misuse(predicate, "there is no numeric value to look at")
        return None
    return math.sqrt(squares / count)


@_predicate(False)
def spike(x: Any, factor: float = DEFAULT_SPIKE_FACTOR, warmup: int = DEFAULT_SPIKE_WARMUP) -> bool:
    """True when |x| jumps above ``factor`` × its running level at this call site, or turns NaN/Inf.

    The level is a running average of the magnitudes seen here (a scalar's absolute value, a tensor's RMS, a
    module's gradient norm); the first ``warmup`` evaluations only learn it. A spike does not drag the level up, so a
    lasting divergence keeps firing.
    """
    key, _ = _call_site()
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not factor > 0 or math.isinf(factor):
        _misuse("spike", t("factor must be a positive number, got {0}", repr(factor)))
        return False
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 1:
        _misuse("spike", t("warmup must be a positive integer, got {0}", repr(warmup)))
        return False
    value = _magnitude("spike", x)
    if value is None:
        return False
    if not math.isfinite(value):
        return True
    seen, level = _spike_levels.get(key, (0, 0.0))
    if seen < warmup:
        _remember(_spike_levels, key, (seen + 1, (level * seen + value) / (seen + 1)))
        return False
    fired = value > factor * level if level > 0 else value > 0
    kept = min(value, factor * level) if level > 0 else value
    _remember(_spike_levels, key, (seen + 1, (1 - SPIKE_SMOOTHING) * level + SPIKE_SMOOTHING * kept))
    return fired


def _remember(store: dict[tuple[Any, ...], Any], key: tuple[Any, ...], value: Any) -> None:
    store.pop(key, None)
    store[key] = value
    while len(store) > MAX_SITES:
        store.pop(next(iter(store)))


def _grad_norm_of(found: Gathered) -> float:
    torch = loaded_torch()
    total = 0.0
    tensors = [t for t in found.tensors if t.numel() and t.device.type != "meta"]
    if tensors and torch is not None:
        with torch.no_grad():
            dense = [t.detach() for t in tensors if t.layout == torch.strided]
            dense = [t if (t.is_floating_point() or t.is_complex()) else t.to(torch.float32) for t in dense]
            sparse = [t for t in tensors if t.layout != torch.strided]
            norms = []
            if dense:
                get_total_norm = getattr(torch.nn.utils, "get_total_norm", None)
                if get_total_norm is not None:
                    norms.append(get_total_norm(dense, norm_type=2.0, error_if_nonfinite=False))
                else:  # torch < 2.6
                    norms.extend(torch.linalg.vector_norm(t) for t in dense)
            norms.extend(torch.linalg.vector_norm(t.coalesce().values()) for t in sparse)
            if norms:
                total = float(torch.linalg.vector_norm(torch.stack([n.to(norms[0].device) for n in norms])))
    np = loaded_numpy()
    if found.arrays and np is not None:
        squares = sum(float(np.linalg.norm(a.astype(np.float64, copy=False))) ** 2 for a in found.arrays if a.size)
        total = math.sqrt(total * total + squares)
    return math.inf if math.isnan(total) else total


@_predicate(NO_NUMBER)
def grad_norm(model_or_params: Any) -> float:
    """The total L2 norm of the gradients: ``grad_norm(model) > 1e3`` catches exploding gradients.

    Accepts a module, an optimizer, parameters (a list or ``model.parameters()``) or gradient tensors. A NaN or Inf
    gradient gives ``inf`` (so ``> threshold`` fires); gradients that are all zero give 0.0 (so ``< 1e-7`` fires).
    With no gradient at all (before any backward) it gives ``NO_GRADIENTS``, and on misuse ``NO_NUMBER``: both are
    falsy NaNs, so a bare ``grad_norm(model)``, ``grad_norm(model) > 1e3`` and ``grad_norm(model) < 1e-7`` are all
    False until a backward has produced gradients. Only misuse is reported.
    """
    found = gradients_of(model_or_params)
    if found.problems:
        _misuse("grad_norm", found.problems[0])
        return NO_NUMBER
    if not found.tensors and not found.arrays:
        return NO_GRADIENTS
    return _grad_norm_of(found)


@_predicate(False)
def exploding(x: Any, limit: float = 1e4) -> bool:
    """True when some element of ``x`` exceeds ``limit`` in absolute value, or is NaN/Inf."""
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or math.isnan(limit) or limit < 0:
        _misuse("exploding", t("limit must be a non-negative number, got {0}", repr(limit)))
        return False
    found = _gathered("exploding", x)
    if found is None:
        return False
    if nonfinite_of(found).total:
        return True
    if any(abs(v) > limit for v in found.numbers):
        return True
    torch = loaded_torch()
    with _no_grad():
        for tensor in found.tensors:
            if (
                tensor.numel() == 0
                or tensor.device.type == "meta"
                or tensor.dtype == torch.bool
                or tensor.layout != torch.strided
            ):
                continue
            values = tensor.detach()
            if values.is_complex():
                if float(values.abs().amax()) > limit:
                    return True
                continue
            low, high = torch.aminmax(values)
            if max(-float(low), float(high)) > limit:
                return True
    for a in found.arrays:
        if a.size and a.dtype.kind in "fiu" and max(-float(a.min()), float(a.max())) > limit:
            return True
    return False


@_predicate(False)
def zero(x: Any) -> bool:
    """True when every element of ``x`` is exactly 0 (for a module or optimizer: every gradient it has).

    Empty values and modules without gradients are not "zero" (there is nothing to see yet).
    """
    if is_module(x) or is_optimizer(x):
        found = gradients_of(x)
    else:
        found = gather(x, with_grads=False)
    if found.problems:
        _misuse("zero", found.problems[0])
        return False
    if found.empty:
        return False
    if any(v != 0 for v in found.numbers):
        return False
    torch = loaded_torch()
    seen_any = bool(found.numbers)
    with _no_grad():
        for t in found.tensors:
            if t.numel() == 0 or t.device.type == "meta":
                continue
            values = t.detach()
            if values.layout != torch.strided:
                values = values.coalesce().values() if values.is_sparse else values.to_dense()
            if values.dtype == torch.bool:
                if bool(values.any()):
                    return False
            else:
                if values.is_complex():
                    values = torch.view_as_real(values)
                low, high = torch.aminmax(values)
                if not (float(low) == 0 and float(high) == 0):
                    return False
            seen_any = True
    for a in found.arrays:
        if a.size:
            if a.dtype.kind not in "fciub" or bool(a.any()):
                return False
            seen_any = True
    return seen_any


@_predicate(False)
def changed(x: Any) -> bool:
    """True when ``x`` differs from its value at the previous evaluation at this call site (False the first time).

    Compares a fingerprint (shape, dtype, sum and norm per tensor), so it costs two reductions per tensor and keeps no
    copy of the data. ``not tensorsight.changed(model)`` stops when the weights froze (lr 0, no optimizer step).
    """
    key, _ = _call_site()
    found = gather(x, with_grads=False)
    if found.problems:
        _misuse("changed", found.problems[0])
        return False
    fingerprint = _fingerprint(found)
    previous = _fingerprints.get(key)
    _remember(_fingerprints, key, fingerprint)
    return previous is not None and previous != fingerprint


def _fingerprint(found: Gathered) -> tuple[Any, ...]:
    torch = loaded_torch()
    parts: list[Any] = [repr(v) for v in found.numbers]
    tensors = [t for t in found.tensors if t.device.type != "meta" and t.layout == torch.strided]
    with _no_grad():
        for t in tensors:
            values = t.detach()
            if values.is_complex():
                values = torch.view_as_real(values)
            if not values.is_floating_point():
                values = values.to(torch.float64)
            if values.numel():
                stats = torch.stack([values.sum(), torch.linalg.vector_norm(values)]).tolist()
            else:
                stats = []
            parts.append((tuple(t.shape), str(t.dtype), tuple(repr(s) for s in stats)))
    for a in found.arrays:
        parts.append((a.shape, str(a.dtype), a.tobytes() if a.size <= 64 else repr((a.sum(), a.min(), a.max()))))
    return tuple(parts)


@_predicate(False)
def grad_missing(model_or_params: Any) -> bool:
    """True when a parameter that requires grad has no gradient (no backward yet, a detached graph, an unused layer)."""
    params: list[Any] = []
    items = [model_or_params] if not isinstance(model_or_params, (list, tuple, set)) else list(model_or_params)
    for item in items:
        if is_module(item):
            params.extend(item.parameters())
        elif is_optimizer(item):
            params.extend(optimizer_parameters(item))
        elif is_tensor(item):
            params.append(item)
        elif hasattr(item, "__next__"):
            params.extend(p for p in item if is_tensor(p))
        else:
            _misuse("grad_missing", t("expected a module, optimizer or parameters; got {0}", type_name(item)))
            return False
    return any(p.requires_grad and p.is_leaf and p.grad is None for p in params)


# ---- shapes and devices ----------------------------------------------------------------------------------------------


@_predicate(False)
def shape_is(x: Any, shape: Any) -> bool:
    """True when ``x.shape`` matches ``shape``: ``None`` or ``-1`` match any size, one ``...`` any number of dims.

    ``not tensorsight.shape_is(logits, (None, 10))`` stops when the logits are not ``[batch, 10]``.
    """
    actual = getattr(x, "shape", None)
    if actual is None or is_module(x) or isinstance(x, (str, bytes)):
        _misuse("shape_is", t("expected a tensor or array (something with .shape); got {0}", type_name(x)))
        return False
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        _misuse("shape_is", t("expected the shape as a tuple such as (None, 10); got {0}", type_name(shape)))
        return False
    pattern = list(shape)
    valid = all(
        p is None or p is Ellipsis or (isinstance(p, int) and not isinstance(p, bool) and p >= -1) for p in pattern
    )
    if not valid or sum(p is Ellipsis for p in pattern) > 1:
        _misuse("shape_is", t("shape entries must be sizes, None/-1 (any) or one ...; got {0}", repr(tuple(pattern))))
        return False
    dims = [int(d) for d in actual]
    if Ellipsis in pattern:
        cut = pattern.index(Ellipsis)
        head, tail = pattern[:cut], pattern[cut + 1 :]
        if len(dims) < len(head) + len(tail):
            return False
        return _dims_match(dims[: len(head)], head) and _dims_match(dims[len(dims) - len(tail) :], tail)
    return len(dims) == len(pattern) and _dims_match(dims, pattern)


def _dims_match(dims: list[int], pattern: list[Any]) -> bool:
    return all(p is None or p == -1 or p == d for d, p in zip(dims, pattern, strict=True))


@_predicate(False)
def wrong_device(*tensors_or_modules: Any, device: Any = None) -> bool:
    """True when the given tensors/modules do not all live on one device, or (with ``device=``) not on that one.

    ``device="cuda"`` matches any CUDA device; ``"cuda:1"`` only that one. numpy arrays count as CPU.
    """
    found = gather(list(tensors_or_modules), with_grads=False)
    if found.problems:
        _misuse("wrong_device", found.problems[0])
        return False
    devices = {(t.device.type, t.device.index) for t in found.tensors}
    if found.arrays:
        devices.add(("cpu", None))
    if not devices:
        if not found.numbers:
            _misuse("wrong_device", "no tensor, array or module was given")
        return False
    if device is None:
        return len({_normal(d) for d in devices}) > 1
    torch = loaded_torch()
    try:
        wanted = torch.device(device) if torch is not None else None
    except (RuntimeError, TypeError, ValueError):
        _misuse("wrong_device", t("device={0} is not a device name such as 'cuda' or 'cpu'", repr(device)))
        return False
    if wanted is None:
        return False
    if wanted.index is None:
        return any(kind != wanted.type for kind, _ in devices)
    return any(_normal((kind, index)) != (wanted.type, wanted.index) for kind, index in devices)


def _normal(device: tuple[str, int | None]) -> tuple[str, int | None]:
    kind, index = device
    if kind == "cpu":
        return kind, None
    return kind, 0 if index is None else index


# ---- training position -----------------------------------------------------------------------------------------------


def step() -> int:
    """The training step in progress, 1-based: completed ``optimizer.step()`` calls + 1."""
    return steps.current_step() + 1


def rank() -> int:
    """This process's rank (``agent.runtime.identity``): 0 when the program is not distributed."""
    here = identity.rank()
    return 0 if here is None else here


def world_size() -> int:
    """Number of processes in the job (``agent.runtime.identity``): 1 when the program is not distributed."""
    return identity.world_size()


def is_distributed() -> bool:
    """True inside a distributed job (a launcher's ``RANK`` in the environment, or an initialised process group)."""
    return identity.is_distributed()


@_predicate(False)
def on_rank(*ranks: int) -> bool:
    """True when this process is one of ``ranks`` (rank 0 when none are given): ``on_rank(1) and nan(loss)``."""
    wanted = ranks or (0,)
    flat: list[Any] = []
    for r in wanted:
        flat.extend(r if isinstance(r, (list, tuple, set, range)) else [r])
    if not all(isinstance(r, int) and not isinstance(r, bool) for r in flat):
        _misuse("on_rank", t("ranks must be integers, got {0}", repr(ranks)))
        return False
    return rank() in flat


# ---- helpers ---------------------------------------------------------------------------------------------------------


def _no_grad() -> Any:
    torch = loaded_torch()
    return torch.no_grad() if torch is not None else contextlib.nullcontext()
