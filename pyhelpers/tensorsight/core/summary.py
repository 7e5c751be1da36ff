"""The summary-line grammar: one short line per tensor, array, module, optimizer or data loader.

Pure formatting over plain facts (the agent's presentation gathers them from live objects; the toolbox and the
language server reuse the same lines). Dtypes, shapes and sizes are written by ``core.notation``, as in inlay hints
and the shape map. A line reads most important first and stays within ``MAX_WIDTH`` characters:

    f32[64, 16] cpu μ=0.012 σ=1.01 [-3.2, 2.9] grad
    f32[] cpu ⚠ NaN nan
    f32[1000] cuda:0 ⚠ NaN×3 +Inf×1 μ=0.5 σ=0.29 [0.001, 1] grad_fn=MulBackward0
    f32[100000000] cpu ⚠ NaN×1 μ=0.000108 (σ, range on expand)

Grammar of a tensor line: ``dtype[shape] where`` · alarms (``⚠``: NaN/±Inf counts, all zero, a gradient with
NaN/Inf) · layout tags · values (≤ ``SMALL`` elements) · ``μ= σ= [min, max]`` of the finite values (``≈`` marks a
figure estimated from a sample; ``(σ, range on expand)`` when a huge tensor's line stopped at the mean) · gradient
state (``grad`` = requires grad, ``grad norm=``, ``grad_fn=``). The first ``HEAD_WIDTH`` characters carry the
dtype, shape, device and alarm (a long shape is shortened to fit), so a narrow Variables column or a truncated
inlay still shows what matters. When the line is too long, the least important parts go first; alarms go last.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tensorsight.core.notation import format_shape
from tensorsight.core.stats.figures import Stats

MAX_WIDTH = 120
SMALL = 10  # tensors with at most this many elements show their values
HEAD_WIDTH = 40  # characters that carry dtype, shape, device and alarm
PARTIAL_NOTE = "(σ, range on expand)"  # a line whose figures stopped at the mean (``Stats.complete`` False)

# part priorities: lower survives longer when the line must shrink
_ESSENTIAL, _ALARM, _VALUES, _STATS, _RANGE, _GRAD, _DETAIL = 0, 1, 2, 3, 4, 5, 6


# ---- numbers ---------------------------------------------------------------------------------------------------


def format_number(value: float | int | complex | bool | None, digits: int = 3) -> str:
    """Short, exact-looking numbers: ``0.012``, ``1.01``, ``-3.2``, ``1.2e+05`` → ``1.2e5``, ``nan``, ``inf``."""
    if value is None:
        return "?"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, complex):
        real = format_number(value.real, digits)
        imag = format_number(abs(value.imag), digits)
        sign = "-" if value.imag < 0 or (value.imag == 0 and math.copysign(1, value.imag) < 0) else "+"
        return f"{real}{sign}{imag}j"
    if isinstance(value, int):
        return str(value) if abs(value) < 10**7 else _compact_exponent(f"{value:.{digits}g}")
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "0"
    text = f"{value:.{digits}g}"
    return _compact_exponent(text)


def _compact_exponent(text: str) -> str:
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    return f"{mantissa}e{int(exponent)}"


def format_count(n: int | float) -> str:
    """``950``, ``12,810`` → ``12.8K``, ``1.23M``, ``7B``: counts of elements or parameters."""
    n = float(n)
    for limit, suffix in ((1e9, "B"), (1e6, "M"), (1e4, "K")):
        if abs(n) >= limit:
            scaled = n / (1e3 if suffix == "K" else limit)
            return f"{scaled:.3g}{suffix}"
    return str(int(n)) if n == int(n) else f"{n:.3g}"


def format_values(values: Any) -> str:
    """Nested lists of Python scalars (what ``tolist()`` returns), numbers shortened: ``[[1, 2.5], [nan, 0]]``."""
    if isinstance(values, (list, tuple)):
        return "[" + ", ".join(format_values(v) for v in values) + "]"
    if isinstance(values, float):
        return format_number(values, 4)
    return format_number(values, 4) if isinstance(values, (int, complex, bool)) else str(values)


# ---- line assembly -----------------------------------------------------------------------------------------------


def assemble(parts: Sequence[tuple[int, str]], width: int = MAX_WIDTH) -> str:
    """Join ``(priority, text)`` parts in order; drop the least important until the line fits ``width``."""
    kept = [(priority, text) for priority, text in parts if text]
    while len(" ".join(text for _, text in kept)) > width and len(kept) > 1:
        worst = max(range(len(kept)), key=lambda i: (kept[i][0], i))
        if kept[worst][0] == _ESSENTIAL:
            break
        del kept[worst]
    line = " ".join(text for _, text in kept)
    return line if len(line) <= width else line[: width - 1] + "…"


# ---- tensors and arrays ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorFacts:
    """What a tensor/array line says. ``where`` is a device (``cpu``, ``cuda:0``, ``meta``) or ``ndarray``."""

    dtype: str
    shape: tuple[int, ...] | None
    where: str
    stats: Stats | None = None
    values: Any = None
    tags: tuple[str, ...] = ()
    requires_grad: bool = False
    grad: Stats | None = None
    grad_fn: str | None = None
    note: str | None = None


def tensor_line(facts: TensorFacts, width: int = MAX_WIDTH) -> str:
    """The one-line summary of a tensor or array (see the module docstring for the grammar)."""
    stats = facts.stats
    alarms: list[str] = []
    if stats is not None and stats.has_values:
        alarms += value_alarms(stats)
    if facts.grad is not None:
        alarms += [text.replace("⚠ ", "⚠ grad ", 1) for text in value_alarms(facts.grad, zero_alarm=False)]
    head = len(facts.dtype) + len(facts.where) + sum(len(text) + 1 for text in alarms) + 1
    parts: list[tuple[int, str]] = [
        (_ESSENTIAL, f"{facts.dtype}{format_shape(facts.shape, max(16, HEAD_WIDTH - head))}"),
        (_ESSENTIAL, facts.where),
    ]
    parts += [(_ALARM, text) for text in alarms]
    parts += [(_DETAIL if tag.startswith("(") else _ALARM, tag) for tag in facts.tags]
    if facts.values is not None:
        parts.append((_VALUES, format_values(facts.values)))
    if stats is not None and stats.has_values:
        parts += _stats_parts(stats, small=facts.values is not None)
    parts += _grad_parts(facts)
    note = facts.note or (stats.note if stats is not None else None)
    if note:
        parts.append((_STATS, f"({note})"))
    return assemble(parts, width)


def value_alarms(stats: Stats, zero_alarm: bool = True) -> list[str]:
    """The loud part of a line: NaN/±Inf counts and all-zero, each starting with ``⚠``."""
    alarms: list[str] = []
    approx = "" if stats.exact else "≈"
    single = stats.numel == 1
    nan, posinf, neginf = stats.nan or 0, stats.posinf or 0, stats.neginf or 0
    if nan + posinf + neginf:
        if nan == stats.numel:
            alarms.append("⚠ NaN" if single else "⚠ all NaN")
        else:
            counts = []
            inf_word = "+Inf" if stats.inf_signed else "Inf"
            for label, count in (("NaN", nan), (inf_word, posinf), ("-Inf", neginf)):
                if count:
                    counts.append(label if single else f"{label}×{approx}{format_count(count)}")
            alarms.append("⚠ " + " ".join(counts))
    elif zero_alarm and stats.all_zero and stats.numel > 1 and stats.kind != "bool":
        alarms.append("⚠ all zero")
    return alarms


def _stats_parts(stats: Stats, small: bool) -> list[tuple[int, str]]:
    if stats.finite == 0:
        return []
    approx = "" if stats.exact else "≈"
    eq = "≈" if approx else "="
    if stats.kind == "bool":
        trues = stats.total if isinstance(stats.total, int) else round((stats.total or 0).real)
        if small:
            return []
        if trues == 0:
            return [(_STATS, f"all False{approx}")]
        if trues == stats.numel:
            return [(_STATS, f"all True{approx}")]
        return [(_STATS, f"{approx}{format_count(trues)} True ({format_number(100 * trues / stats.numel, 3)}%)")]
    if stats.all_zero or (small and stats.numel == 1):
        return []
    if not stats.complete:  # one pass only (a huge tensor in a busy view): the mean, and where the rest is
        return [(_STATS, f"μ{eq}{format_number(stats.mean)}"), (_STATS, PARTIAL_NOTE)]
    if _constant(stats) and not small:
        return [(_STATS, f"all {format_number(_as_kind(stats.min, stats.kind), 4)}")]
    parts = [(_STATS, f"μ{eq}{format_number(stats.mean)}")]
    if stats.std is not None:
        parts.append((_STATS, f"σ{eq}{format_number(stats.std)}"))
    if not small and stats.min is not None:
        low, high = format_number(_as_kind(stats.min, stats.kind)), format_number(_as_kind(stats.max, stats.kind))
        label = "|z|∈" if stats.kind == "complex" else ""
        parts.append((_RANGE, f"{label}{approx}[{low}, {high}]"))
    if not stats.exact and stats.counted:
        parts.append((_DETAIL, f"(sampled {format_count(stats.counted)} of {format_count(stats.numel)})"))
    return parts


def _constant(stats: Stats) -> bool:
    """Every element has the same finite value (known exactly), e.g. a gradient of ``sum()``."""
    return (
        stats.exact
        and stats.kind in ("float", "int")
        and stats.numel > 1
        and stats.finite == stats.numel
        and stats.min is not None
        and stats.min == stats.max
    )


def _as_kind(value: float | None, kind: str) -> float | int | None:
    if value is not None and kind == "int" and math.isfinite(value) and value == int(value):
        return int(value)
    return value


def _grad_parts(facts: TensorFacts) -> list[tuple[int, str]]:
    parts: list[tuple[int, str]] = []
    grad = facts.grad
    if grad is not None:
        if grad.has_values and grad.nonfinite:
            pass  # already loud among the alarms
        elif grad.all_zero:
            parts.append((_GRAD, "grad=0"))
        elif grad.norm is not None and grad.has_values:
            approx = "" if grad.exact else "≈"
            parts.append((_GRAD, f"grad norm={approx}{format_number(grad.norm)}"))
        else:
            parts.append((_GRAD, "grad"))
    elif facts.requires_grad and facts.grad_fn is None:
        parts.append((_GRAD, "grad"))
    if facts.grad_fn:
        parts.append((_GRAD, f"grad_fn={facts.grad_fn}"))
    return parts


# ---- modules, optimizers, data loaders ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ModuleFacts:
    """What an ``nn.Module`` line says. ``nonfinite_params``/``nonfinite_grads`` name the offending parameters."""

    name: str
    training: bool
    modes_differ: int = 0
    params: int = 0
    trainable: int = 0
    devices: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    nonfinite_params: tuple[str, ...] = ()
    nonfinite_grads: tuple[str, ...] = ()
    grad_norm: float | None = None
    lazy: bool = False
    note: str | None = None
    scanned: tuple[int, int] | None = None  # (tensors scanned, tensors in all) when the NaN/Inf scan stopped early


def module_line(facts: ModuleFacts, width: int = MAX_WIDTH) -> str:
    """E.g. ``MLP cpu f32 train 12.8K params (all trainable) grad norm=0.53``; an alarm right after the dtype."""
    mode = "train" if facts.training else "eval"
    if facts.modes_differ:
        other = "eval" if facts.training else "train"
        plural = "s" if facts.modes_differ > 1 else ""
        mode += f" ({facts.modes_differ} submodule{plural} {other})"
    # what a narrow Variables view must still show comes first: the class, where it lives and any alarm
    parts: list[tuple[int, str]] = [(_ESSENTIAL, facts.name)]
    parts.append((_STATS, ",".join(facts.devices)))
    parts.append((_STATS, ",".join(facts.dtypes)))
    for label, names in (("weights", facts.nonfinite_params), ("grads", facts.nonfinite_grads)):
        if names:
            more = f" (+{len(names) - 1})" if len(names) > 1 else ""
            parts.append((_ALARM, f"⚠ NaN/Inf in {label}: {names[0]}{more}"))
    if facts.scanned is not None:  # partial, and said as loudly as an alarm: silence would read as "no NaN"
        done, total = facts.scanned
        parts.append(
            (_ALARM, f"(scanned {format_count(done)} of {format_count(total)} tensors for NaN/Inf, rest on expand)")
        )
    parts.append((_ESSENTIAL, mode))
    if facts.lazy:
        known = f"{format_count(facts.params)} + " if facts.params else ""
        parts.append((_ESSENTIAL, f"{known}? params (lazy: sized by the first forward)"))
    elif facts.params:
        if facts.trainable == facts.params:
            trainable = "(all trainable)"
        elif facts.trainable == 0:
            trainable = "(frozen)"
        else:
            trainable = f"({format_count(facts.trainable)} trainable)"
        parts.append((_ESSENTIAL, f"{format_count(facts.params)} params"))
        parts.append((_STATS, trainable))
    else:
        parts.append((_ESSENTIAL, "no params"))
    if facts.grad_norm is not None and not facts.nonfinite_grads:
        parts.append((_GRAD, f"grad norm={format_number(facts.grad_norm)}"))
    if facts.note:
        parts.append((_DETAIL, f"({facts.note})"))
    return assemble(parts, width)


@dataclass(frozen=True)
class OptimizerFacts:
    """What an optimizer line says: one dict of hyperparameters per param group (``params`` excluded)."""

    name: str
    groups: tuple[dict[str, Any], ...] = ()
    step: int | None = None
    tensors: int = 0


_HYPERPARAMETERS = (("lr", "lr"), ("momentum", "momentum"), ("betas", "betas"), ("weight_decay", "wd"))


def optimizer_line(facts: OptimizerFacts, width: int = MAX_WIDTH) -> str:
    """E.g. ``Adam lr=0.001 betas=(0.9, 0.999) wd=0 step 120``; several groups show a list per hyperparameter."""
    parts: list[tuple[int, str]] = [(_ESSENTIAL, facts.name)]
    if len(facts.groups) > 1:
        parts.append((_ESSENTIAL, f"{len(facts.groups)} groups"))
    for key, label in _HYPERPARAMETERS:
        values = [group[key] for group in facts.groups if key in group]
        if not values:
            continue
        rendered = [_hyper(v) for v in values]
        text = rendered[0] if len(set(rendered)) == 1 else "[" + ", ".join(rendered) + "]"
        parts.append((_ESSENTIAL if key == "lr" else _STATS, f"{label}={text}"))
    if any(group.get("nesterov") for group in facts.groups):
        parts.append((_STATS, "nesterov"))
    parts.append((_ESSENTIAL, "step ?" if facts.step is None else f"step {facts.step}"))
    if facts.tensors:
        parts.append((_DETAIL, f"({facts.tensors} tensors)"))
    return assemble(parts, width)


def _hyper(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_hyper(v) for v in value) + ")"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return format_number(value, 4)
    text = str(value)
    return text if len(text) <= 24 else text[:23] + "…"


@dataclass(frozen=True)
class LoaderFacts:
    """What a ``DataLoader`` line says. ``shuffle`` is None when the sampler does not tell."""

    batch_size: int | None
    num_workers: int
    shuffle: bool | None = None
    drop_last: bool = False
    dataset_len: int | None = None
    batches: int | None = None
    sampler: str | None = None
    extra: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class DatasetFacts:
    """What a ``Dataset`` line says: its class, length (None when it has none), and what it is made of: the
    per-sample shapes of a ``TensorDataset``, or the dataset a ``Subset`` picks from."""

    name: str
    length: int | None = None
    samples: tuple[str, ...] = ()
    of: str | None = None
    of_length: int | None = None


def dataset_line(facts: DatasetFacts, width: int = MAX_WIDTH) -> str:
    """E.g. ``TensorDataset 60000 samples of f32[1, 28, 28], i64[]`` or ``Subset 10000 of MNIST (60000)``."""
    parts: list[tuple[int, str]] = [(_ESSENTIAL, facts.name)]
    if facts.length is not None:
        count = format_count(facts.length)
        if facts.of is not None:
            whole = f" ({format_count(facts.of_length)})" if facts.of_length is not None else ""
            parts.append((_ESSENTIAL, f"{count} of {facts.of}{whole}"))
        else:
            parts.append((_ESSENTIAL, f"{count} samples"))
    elif facts.of is not None:
        parts.append((_ESSENTIAL, f"of {facts.of}"))
    if facts.samples:
        parts.append((_STATS, ("of " if facts.length is not None else "samples ") + ", ".join(facts.samples)))
    return assemble(parts, width)


def loader_line(facts: LoaderFacts, width: int = MAX_WIDTH) -> str:
    """E.g. ``DataLoader batch_size=64 shuffle num_workers=0 ⚠ loads in main process 60000 samples 938 batches``."""
    parts: list[tuple[int, str]] = [(_ESSENTIAL, "DataLoader"), (_ESSENTIAL, f"batch_size={facts.batch_size}")]
    if facts.shuffle is not None:
        parts.append((_ESSENTIAL, "shuffle" if facts.shuffle else "no shuffle"))
    elif facts.sampler:
        parts.append((_STATS, f"sampler={facts.sampler}"))
    parts.append((_ESSENTIAL, f"num_workers={facts.num_workers}"))
    if facts.num_workers == 0:
        parts.append((_ALARM, "⚠ loads in main process"))
    if facts.drop_last:
        parts.append((_STATS, "drop_last"))
    if facts.dataset_len is not None:
        parts.append((_STATS, f"{format_count(facts.dataset_len)} samples"))
    if facts.batches is not None:
        parts.append((_STATS, f"{format_count(facts.batches)} batches"))
    parts += [(_DETAIL, text) for text in facts.extra]
    return assemble(parts, width)
