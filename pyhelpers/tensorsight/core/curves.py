"""Curve diagnosis: what the recorded loss and gradient series of a run say about its training dynamics (pure).

The seed lesson's list of what to look for in the curves, as ``dynamics`` findings with their evidence:

- training loss not decreasing: the learning rate is too low, or a bug stops learning;
- training loss oscillating or diverging: the learning rate is too high (with the evidence: the lr, the step-to-step
  change, the loss scale, and a ``confidence``); a loss that swings by more than half its level, changing direction
  often, and ends above its very first value is one even when its smoothed trend falls from an early jump; a loss
  that went NaN is blamed on the learning rate only when the NaN sentinel's origin does not point elsewhere (the data,
  a ``log(0)`` or a division by zero);
- losses that oscillate by nature (each side of an adversarial pair: a GAN's generator and discriminator) get no
  trend verdict;
- training loss falling while validation loss rises: overfitting;
- gradients of the first layers orders of magnitude below the last ones: vanishing gradients;
- gradient norm exploding, judged against the loss scale and its own history (a summed loss over a batch has
  gradient norms in the thousands and is healthy): clip gradients (and/or lower the learning rate);
- a cross-entropy sitting far above its chance level ``ln(classes)`` (worse than guessing): the logits blew up, the
  learning rate is too high (the class count comes from the model's own output or from the logits the program's
  classification loss scores, ``extra["classes"]``);
- the first updates moving the weights by a tenth of their size per step or more (``extra["early_update_ratios"]``,
  measured by ``agent.measurement.update_size``) while the loss jumps to 1.5 times its first value: the learning
  rate is far too high even when the loss later settles (the overshoot may leave the model stuck, its ReLUs dead);
- a classification loss that stays at its chance level ``ln(classes)`` from start to end: training at chance level
  (labels misaligned with their features), at the loss call (``extra["classification_at"]``); a loss that barely
  moves but sits clearly below chance learns slowly: an info finding that says how far from chance it is.

A healthy run gets no finding. The agent records the series (``tensorsight.agent.measurement.scalars``) and calls
``diagnose_curves`` at the end of the run; the thresholds below are deliberately conservative, because a false
"your training is broken" costs the user more than a missed one.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tensorsight.core.findings import Finding, place_text
from tensorsight.core.l10n import t

Location = tuple[str, int]

MIN_LOSS_STEPS = 20  # fewer training steps than this: no loss diagnosis
NOT_DECREASING_RATIO = 0.95  # the end of the run keeps at least 95% of the starting loss
DIVERGING_RATIO = 1.5  # the end of the run is 50% above its start
OSCILLATION_SWING = 0.5  # median step-to-step change, relative to the loss level
OSCILLATION_FLIPS = 0.4  # share of steps where the loss changes direction
OSCILLATION_PROGRESS = 0.8  # ... and the run kept more than 80% of its starting loss
OVERFIT_RISE = 0.1  # validation loss 10% above its best value
MIN_VAL_POINTS = 4  # validation passes needed before judging overfitting
VANISHING_RATIO = 1e-3  # first-layer gradient norm below 1/1000 of the last layer's
EXPLODING_NORM = 1e3  # without a loss series: a total gradient norm this large is abnormal for any usual loss scale
EXPLODING_GROWTH = 100.0  # or it grew this much from the start of the run
# or it is both above EXPLODING_NORM and this many times the loss scale (median |loss|): a summed VAE loss of 2.5e4
# has healthy gradient norms of 1.6e4 (0.6×), an amplifying deep net reaches 20-40× its (already inflated) loss
EXPLODING_LOSS_RATIO = 10.0
CLIP_TOLERANCE = 1.001  # a gradient norm read after clip_grad_norm_(max_norm=c) is at most c (and float noise)
CLIMBED_FROM_FIRST = 2.0  # the loss settled this many times above its first value: the first updates overshot
DECREASED_FROM_FIRST = 2.0  # the first loss was this many times the end: the run did learn (fast convergence)
# ops whose NaN/Inf from finite inputs comes from their domain (log of 0, division by 0, sqrt of a negative), not from
# values grown too large by the learning rate
DOMAIN_OPS = frozenset(
    "log log2 log10 log1p div divide true_divide reciprocal rsqrt sqrt pow acos asin atanh acosh lgamma digamma "
    "polygamma erfinv xlogy logit __truediv__ __rtruediv__ __pow__ __rpow__ __div__ __rdiv__".split()
)
SPIKE_FACTOR = 3.0  # a loss is a spike when above this many times its recent median
SPIKE_WINDOW = 20


class Series:
    """Values recorded per step, thinned evenly when the run is long so memory stays bounded.

    Once ``limit`` points are stored every second point is dropped and only every ``stride``-th new value is kept,
    so a 10-million-step run still costs a few thousand floats while its shape (start, end, trend) survives.
    """

    def __init__(self, limit: int = 4096) -> None:
        self.steps: list[int] = []
        self.values: list[float] = []
        self._limit = max(16, int(limit))
        self._stride = 1
        self._seen = 0
        self.first_nonfinite_step: int | None = None

    def add(self, step: int, value: float) -> None:
        if not math.isfinite(value) and self.first_nonfinite_step is None:
            self.first_nonfinite_step = step
        self._seen += 1
        if (self._seen - 1) % self._stride:
            return
        self.steps.append(int(step))
        self.values.append(float(value))
        if len(self.values) > self._limit:
            self.steps = self.steps[::2]
            self.values = self.values[::2]
            self._stride *= 2

    def __len__(self) -> int:
        return len(self.values)


@dataclass
class TrainingCurves:
    """Everything the diagnosis reads: the series of one run and where in the user's code they come from."""

    train_loss: Sequence[float] = ()
    train_steps: Sequence[int] = ()
    val_loss: Sequence[float] = ()
    val_steps: Sequence[int] = ()
    grad_norm: Sequence[float] = ()
    grad_steps: Sequence[int] = ()
    early_layer: str | None = None
    late_layer: str | None = None
    early_grad_norm: Sequence[float] = ()
    late_grad_norm: Sequence[float] = ()
    lr: float | None = None
    first_nonfinite_loss_step: int | None = None
    first_nonfinite_grad_step: int | None = None
    # user source lines: backward() call, optimizer construction, validation loss, model call
    loss_at: Location | None = None
    optimizer_at: Location | None = None
    # the ``add_argument`` line whose default gave the optimizer its learning rate (``core.argparse_defaults``): a
    # verdict that blames the learning rate is reported there, where the number is written
    lr_at: Location | None = None
    validation_at: Location | None = None
    model_at: Location | None = None
    # several optimizers: the variable that holds this one (named in messages), and whether its loss is one side of
    # an adversarial pair (a GAN), oscillatory by nature
    optimizer_name: str | None = None
    adversarial: bool = False
    hand_written: bool = False  # the steps were parameter updates written by hand (no optimizer, lr unknown)
    # its gradients were never cleared (a training-logic finding says so): the curves show that bug, not the lr
    gradients_uncleared: bool = False
    nonfinite_origin: dict[str, Any] | None = None  # the sentinel's first ``nonfinite`` finding (wire dict)
    # the losses of the whole run, for an optimizer stepped on a loss backpropagated for another (encoder/decoder
    # optimizers after one backward): its gradient norms are judged against that loss's scale
    run_loss: Sequence[float] = ()
    extra: dict[str, Any] = field(default_factory=dict)


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


def is_spike(recent: Sequence[float], value: float, factor: float = SPIKE_FACTOR, floor: float = 0.0) -> bool:
    """True when ``value`` jumps above ``factor`` times the median of ``recent`` (at least 5 finite values) and by
    more than ``floor`` (so noise on a loss that is already near zero is not a spike)."""
    finite = [v for v in recent if math.isfinite(v)]
    if len(finite) < 5 or not math.isfinite(value):
        return False
    level = median(finite)
    spread = median([abs(v - level) for v in finite])
    if level <= 0:
        return False
    return value > level * factor and value - level > max(3.0 * spread, floor)


@dataclass(frozen=True)
class LossTrend:
    """How a loss series moved: robust start and end levels, typical swing, how often it changes direction."""

    start: float
    end: float
    best: float
    swing: float
    flips: float
    steps: int
    level: float = 0.0  # median |loss| over the second half: the scale the swing is relative to

    @property
    def ratio(self) -> float:
        return self.end / self.start if self.start > 0 else math.inf

    def best_smoothed(self, values: Sequence[float]) -> float:
        """The lowest median over windows of a tenth of the run: where the smoothed curve got lowest."""
        finite = [v for v in values if math.isfinite(v)]
        window = max(3, len(finite) // 10)
        return min(median(finite[i : i + window]) for i in range(0, max(1, len(finite) - window + 1), window))


def loss_trend(values: Sequence[float]) -> LossTrend | None:
    """Start/end medians over the first and last tenth, swing and direction changes over the second half."""
    finite = [v for v in values if math.isfinite(v)]
    if len(finite) < MIN_LOSS_STEPS:
        return None
    window = max(3, len(finite) // 10)
    start, end = median(finite[:window]), median(finite[-window:])
    second_half = finite[len(finite) // 2 :]
    diffs = [b - a for a, b in itertools.pairwise(second_half)]
    level = median([abs(v) for v in second_half]) or 1e-12
    swing = median([abs(d) for d in diffs]) / level if diffs else 0.0
    signs = [d > 0 for d in diffs if d != 0]
    flips = sum(1 for a, b in itertools.pairwise(signs) if a != b) / max(1, len(signs) - 1)
    return LossTrend(start, end, min(finite), swing, flips, len(finite), level)


def _where(*candidates: Location | None) -> Location | None:
    for candidate in candidates:
        if candidate is not None:
            return candidate
    return None


def _fmt(value: float) -> str:
    return f"{value:.3g}"


def _lr_text(lr: float | None) -> str:
    return f" (lr={lr:.3g})" if lr is not None else ""


def nonfinite_cause(origin: dict[str, Any] | None) -> str:
    """Why a NaN/Inf appeared, from the sentinel's ``nonfinite`` finding (wire dict): ``"data"`` (it came in with a
    batch), ``"domain"`` (an op outside its domain: ``log(0)``, ``x / 0``, ``sqrt(-1)``), ``"overflow"`` (values grown
    too large: the learning rate is a suspect) or ``"unknown"`` (no origin seen)."""
    if not origin:
        return "unknown"
    details = origin.get("details") or {}
    if details.get("phase") == "data":
        return "data"
    op = str(details.get("op") or "")
    if op.rsplit(".", 1)[-1].lower() in DOMAIN_OPS:
        return "domain"
    return "overflow"


def _origin_text(origin: dict[str, Any]) -> str:
    details = origin.get("details") or {}
    op = details.get("op")
    where = f"{os.path.basename(str(origin.get('file')))}:{origin.get('line')}"
    converted = details.get("converted_at")  # data numpy made at ``where``, turned into a tensor at ``converted``
    if converted and op and not str(op).startswith("("):
        return t("made at {0}, `{1}` at {2}", where, op, converted)
    # "(not replayed)", "(loss)": the sentinel's placeholder where it names no op, not code the user wrote
    return t("`{0}` at {1}", op, where) if op and not str(op).startswith("(") else where


def _nonfinite_loss(curves: TrainingCurves, where: Location, subject: str) -> list[Finding]:
    step = curves.first_nonfinite_loss_step
    origin = curves.nonfinite_origin
    cause = nonfinite_cause(origin)
    first_step = curves.train_steps[0] if curves.train_steps else None
    if cause not in ("data", "domain") and step is not None and first_step is not None and step <= first_step:
        cause = "before-any-update"  # the first loss was already NaN: no learning rate could have done it
    details: dict[str, Any] = {"diagnosis": "diverging", "nonfinite_step": step, "lr": curves.lr, "cause": cause}
    seen = t(" (see {0})", _origin_text(origin)) if origin is not None else ""  # where the sentinel saw it born
    if cause == "before-any-update":
        message = t(
            "{subject} was NaN/Inf from its first step, before any update{seen}: the learning rate is not the cause; "
            "look at the inputs, the initial weights and the loss computation",
            subject=subject,
            seen=seen,
        )
        return [Finding("dynamics", "warning", message, *where, step=step, details=details)]
    if origin is not None and cause in ("data", "domain"):
        details["origin"] = {"file": origin.get("file"), "line": origin.get("line"), "op": origin["details"].get("op")}
        if cause == "data":
            advice = t(
                "the NaN/Inf came in with the data ({0}), not from the learning rate: clean or "
                "filter the data where it is loaded (drop or impute missing values, check with torch.isfinite)",
                _origin_text(origin),
            )
        else:
            advice = t(
                "it was born in {0} from finite inputs (a log of 0, a division by 0 or the root of "
                "a negative number), not from the learning rate: guard that op (clamp its input with an eps) or use "
                "the stable form (F.binary_cross_entropy_with_logits, log_softmax)",
                _origin_text(origin),
            )
        message = t("{subject} became NaN/Inf: {advice}", subject=subject, advice=advice)
        # the sentinel's error at the origin is the bug; this says what it did to the curve and that the lr is not it
        return [Finding("dynamics", "info", message, *where, step=step, details=details)]
    if not _learning_rate_evidence(curves, origin):
        # no sign of divergence: the learning rate is not blamed for a NaN nobody saw grow
        details["cause"] = "not located" if origin is None else cause
        message = t(
            "{subject} became NaN/Inf{seen}; it did not grow before, so the learning rate is not a "
            "likely cause: look at the op that made it (Break on NaN/Inf stops there) and at the inputs of that step",
            subject=subject,
            seen=seen,
        )
        return [Finding("dynamics", "warning", message, *where, step=step, details=details)]
    message = t(
        "{subject} diverged to NaN/Inf{lr}: the learning rate is probably too high; {remedies}",
        subject=subject,
        lr=_lr_text(curves.lr),
        remedies=_divergence_remedies(curves),
    )
    return [Finding("dynamics", "warning", message, *where, step=step, details=details)]


WARM_UP_RISE = 1.5  # the learning rate peaked this many times above its first value: the schedule warms up


def _divergence_remedies(curves: TrainingCurves) -> str:
    """What to do about a learning rate that is too high, leaving out what the run shows the script already does:
    clipping (``clip_grad_norm_`` was seen, ``clip_norm``) and a warm-up (the rate rose from its first value)."""
    clips = curves.extra.get("clip_norm") is not None
    first, peak = curves.extra.get("first_lr"), curves.extra.get("peak_lr")
    warms_up = isinstance(first, (int, float)) and isinstance(peak, (int, float)) and peak > WARM_UP_RISE * first > 0
    if clips and warms_up:
        return t("lower it (e.g. 10×); the script already clips gradients and warms up")
    if clips:
        return t("lower it (e.g. 10×) or add a warm-up (the script already clips gradients)")
    if warms_up:
        return t("lower it (e.g. 10×) or add gradient clipping (the script already warms up)")
    return t("lower it (e.g. 10×), add gradient clipping or a warm-up")


GROWTH_BEFORE_NONFINITE = 3.0  # the loss just before the NaN against its best: "it diverged"


def _learning_rate_evidence(curves: TrainingCurves, origin: dict[str, Any] | None) -> bool:
    """Whether anything points at the learning rate: the sentinel saw ``optimizer.step()`` make the NaN/Inf from
    finite gradients, or the loss grew to ``GROWTH_BEFORE_NONFINITE`` times its best just before it."""
    if origin is not None and (origin.get("details") or {}).get("phase") == "optimizer":
        return True
    step = curves.first_nonfinite_loss_step
    before = [
        value
        for at, value in zip(curves.train_steps, curves.train_loss, strict=False)
        if (step is None or at < step) and math.isfinite(value)
    ]
    if len(before) < 5:
        return False
    recent, best = median(before[-3:]), min(before)
    return recent > GROWTH_BEFORE_NONFINITE * max(best, 1e-12) and recent - best > 1e-6


def _subject(curves: TrainingCurves) -> str:
    return t("training loss of `{0}`", curves.optimizer_name) if curves.optimizer_name else t("training loss")


def _lr_advice(curves: TrainingCurves) -> str:
    if curves.hand_written:
        return t("the step size of the hand-written parameter update is probably too high; lower it")
    return t("the learning rate is probably too high; lower it")


def _confidence_text(confidence: float) -> str:
    return t("confidence {0}%", f"{confidence * 100:.0f}")


def diagnose_loss(curves: TrainingCurves) -> list[Finding]:
    """Diverging, oscillating or flat training loss (at most one finding)."""
    where = _where(curves.optimizer_at, curves.loss_at)
    if where is None:
        return []
    lr = curves.lr
    steps = list(curves.train_steps)
    subject = _subject(curves)
    if curves.first_nonfinite_loss_step is not None:
        return _nonfinite_loss(curves, where, subject)
    if curves.adversarial:
        return []  # each side of an adversarial pair climbs when the other wins: that is how these losses look
    trend = loss_trend(curves.train_loss)
    if trend is None:
        return []
    span = t("steps {0}–{1}", steps[0], steps[-1]) if steps else t("{0} steps", trend.steps)
    evidence: dict[str, Any] = {
        "loss_start": round(trend.start, 6),
        "loss_end": round(trend.end, 6),
        "loss_best": round(trend.best, 6),
        "loss_scale": round(trend.level, 6),
        "swing": round(trend.swing, 4),
        "direction_changes": round(trend.flips, 3),
        "steps": trend.steps,
        "lr": lr,
    }
    first = next((v for v in curves.train_loss if math.isfinite(v)), trend.start)
    climbed = first > 0 and min(trend.level, trend.end) > CLIMBED_FROM_FIRST * first
    if climbed and not trend.ratio > DIVERGING_RATIO:
        rise = min(trend.level, trend.end) / first
        confidence = min(0.99, 0.5 + 0.5 * math.log10(rise / CLIMBED_FROM_FIRST) + 0.2 * trend.flips)
        message = t(
            "{subject} climbed from {first} at its first step to around {level} and stays there "
            "({end} at the end, {span}){lr}, typical step-to-step change "
            "{swing}% of its level ({confidence}): the first updates overshot, "
            "{advice} (e.g. 10×) or add a warm-up",
            subject=subject,
            first=_fmt(first),
            level=_fmt(trend.level),
            end=_fmt(trend.end),
            span=span,
            lr=_lr_text(lr),
            swing=f"{trend.swing * 100:.0f}",
            confidence=_confidence_text(confidence),
            advice=_lr_advice(curves),
        )
        details = {
            "diagnosis": "diverging",
            "confidence": round(confidence, 2),
            "loss_first": round(first, 6),
            **evidence,
        }
        return [Finding("dynamics", "warning", message, *where, details=details)]
    if trend.start > 0 and trend.ratio > DIVERGING_RATIO:
        confidence = min(0.99, 0.5 + 0.5 * math.log10(trend.ratio / DIVERGING_RATIO))
        message = t(
            "{subject} is diverging: it rose from {start} to {end} over {span}"
            "{lr}, typical step-to-step change {swing}% of its level "
            "({confidence}): {advice} (e.g. 10×) or add a warm-up",
            subject=subject,
            start=_fmt(trend.start),
            end=_fmt(trend.end),
            span=span,
            lr=_lr_text(lr),
            swing=f"{trend.swing * 100:.0f}",
            confidence=_confidence_text(confidence),
            advice=_lr_advice(curves),
        )
        details = {"diagnosis": "diverging", "confidence": round(confidence, 2), **evidence}
        return [Finding("dynamics", "warning", message, *where, details=details)]
    swinging = trend.swing > OSCILLATION_SWING and trend.flips > OSCILLATION_FLIPS
    if swinging and trend.ratio <= OSCILLATION_PROGRESS and trend.end > first:
        # the smoothed trend falls only from an early jump: the run ends above where it started
        confidence = min(0.99, 0.5 * min(1.0, trend.swing) + 0.5 * trend.flips)
        message = t(
            "{subject} swings {swing}% of its level ({level}) from one step to the next, direction flips on {flips}% "
            "of steps, and it ends at {end}, above its first value {first}, though its smoothed trend fell from the "
            "early jump ({start} → {end} over {span}){lr} ({confidence}): {advice}",
            subject=subject,
            swing=f"{trend.swing * 100:.0f}",
            level=_fmt(trend.level),
            flips=f"{trend.flips * 100:.0f}",
            end=_fmt(trend.end),
            first=_fmt(first),
            start=_fmt(trend.start),
            span=span,
            lr=_lr_text(lr),
            confidence=_confidence_text(confidence),
            advice=_lr_advice(curves),
        )
        details = {"diagnosis": "oscillating", "confidence": round(confidence, 2), "loss_first": round(first, 6)}
        return [Finding("dynamics", "warning", message, *where, details={**details, **evidence})]
    if swinging and trend.ratio > OSCILLATION_PROGRESS:
        confidence = min(0.99, 0.5 * min(1.0, trend.swing) + 0.5 * trend.flips)
        message = t(
            "{subject} oscillates without converging: typical step-to-step change {swing}% of "
            "its level ({level}), direction flips on {flips}% of steps, "
            "{start} → {end} over {span}{lr} ({confidence}): "
            "{advice}",
            subject=subject,
            swing=f"{trend.swing * 100:.0f}",
            level=_fmt(trend.level),
            flips=f"{trend.flips * 100:.0f}",
            start=_fmt(trend.start),
            end=_fmt(trend.end),
            span=span,
            lr=_lr_text(lr),
            confidence=_confidence_text(confidence),
            advice=_lr_advice(curves),
        )
        details = {"diagnosis": "oscillating", "confidence": round(confidence, 2), **evidence}
        return [Finding("dynamics", "warning", message, *where, details=details)]
    if first > DECREASED_FROM_FIRST * trend.end:
        return []  # it fell fast at the very start (a closure optimizer, a tiny problem) and stayed there
    if trend.start > 1e-8 and trend.ratio >= NOT_DECREASING_RATIO:
        below_chance = _learning_slowly(curves, trend, span, lr, where, evidence)
        if below_chance:
            return below_chance
        message = t(
            "training loss is not decreasing: {start} → {end} over {span}"
            "{lr}. Either the learning rate is too low (raise it 10×), or a bug stops learning: "
            "check that optimizer.step() runs, that zero_grad() is called each step, that the optimizer holds the "
            "model's parameters, and that nothing detaches the loss from them",
            start=_fmt(trend.start),
            end=_fmt(trend.end),
            span=span,
            lr=_lr_text(lr),
        )
        return [Finding("dynamics", "warning", message, *where, details={"diagnosis": "not-decreasing", **evidence})]
    return []


OVERSHOOT_RATIO = 0.1  # median relative update size ‖Δθ‖/‖θ‖ over the first steps (stable training: well under 1%)
OVERSHOOT_SPIKE = 1.5  # ... while the loss of those first steps jumps to this many times its first value
OVERSHOOT_RATIO_LARGE = 0.25  # updates this large (a quarter of the weights per step) need less of a jump...
OVERSHOOT_SPIKE_LARGE = 1.1  # ... the loss climbing 10% above its first value in those steps
OVERSHOOT_LOSSES = 20  # the first recorded losses searched for that jump


def diagnose_overshoot(curves: TrainingCurves) -> list[Finding]:
    """The first updates far too large for the weights they change (``extra["early_update_ratios"]``: ‖Δθ‖/‖θ‖ per
    step over each optimizer's first steps) and the loss jumping above its first value meanwhile: the learning rate
    is far too high, even where the loss then settles (on a plateau the overshoot left it on). The larger the updates,
    the smaller the jump that confirms them: half again the first loss for updates of a tenth of the weights, a tenth
    more for updates of a quarter (a warm-up that ramps an Adam step to half the weights' size per step)."""
    ratios = [r for r in curves.extra.get("early_update_ratios") or () if math.isfinite(r)]
    where = _where(curves.optimizer_at, curves.loss_at)
    if where is None or curves.adversarial or curves.hand_written or len(ratios) < 3:
        return []
    if curves.first_nonfinite_loss_step is not None:
        return []  # a loss that went NaN/Inf has its own verdict
    typical = median(ratios)
    early = [v for v in list(curves.train_loss)[:OVERSHOOT_LOSSES] if math.isfinite(v)]
    if typical < OVERSHOOT_RATIO or len(early) < 3 or not early[0] > 0:
        return []
    peak = max(early)
    if peak < (OVERSHOOT_SPIKE_LARGE if typical >= OVERSHOOT_RATIO_LARGE else OVERSHOOT_SPIKE) * early[0]:
        return []
    message = t(
        "the first updates moved the weights by {typical}% of their size per step (median over the first {steps} "
        "steps, up to {largest}%){lr}, and the loss jumped from {first} to {peak}: the learning rate is far too high "
        "(stable training moves them by well under 1% per step); the loss may then settle on a plateau the overshoot "
        "left it on. Lower it (e.g. 10×) or add a warm-up",
        typical=f"{typical * 100:.3g}",
        steps=len(ratios),
        largest=f"{max(ratios) * 100:.3g}",
        lr=_lr_text(curves.extra.get("peak_lr") or curves.lr),
        first=_fmt(early[0]),
        peak=_fmt(peak),
    )
    details = {
        "diagnosis": "overshooting",
        "update_ratio_median": round(typical, 6),
        "update_ratio_max": round(max(ratios), 6),
        "loss_first": round(early[0], 6),
        "loss_early_peak": round(peak, 6),
        "lr": curves.extra.get("peak_lr") or curves.lr,
    }
    return [Finding("dynamics", "warning", message, *where, details=details)]


CHANCE_FACTOR = 10.0  # a mean cross-entropy this many times ln(classes): far worse than a uniform guess
AT_CHANCE_TOLERANCE = 0.05  # a cross-entropy within 5% of ln(classes) from start to end: training at chance level


def _classification(curves: TrainingCurves) -> tuple[int, float, Location | None] | None:
    """``(classes, ln(classes), the loss call's line)`` when the backpropagated loss is a classification loss whose
    class count the agent read at run time (``extra["classes"]``, ``extra["classification_at"]``)."""
    classes = curves.extra.get("classes")
    if not isinstance(classes, int) or classes < 2:
        return None
    at = curves.extra.get("classification_at")
    where = (str(at[0]), int(at[1])) if isinstance(at, (list, tuple)) and len(at) == 2 else None
    return classes, math.log(classes), where


def _learning_slowly(
    curves: TrainingCurves, trend: LossTrend, span: str, lr: float | None, where: Location, evidence: dict[str, Any]
) -> list[Finding]:
    """A classification loss that barely moved but sits clearly below its chance level: it learns, slowly; an info
    finding that says how far from chance it is, instead of a "not decreasing" warning."""
    known = _classification(curves)
    if known is None or not trend.end < known[1] * (1.0 - AT_CHANCE_TOLERANCE) or not trend.end < trend.start:
        return []
    classes, chance, _ = known
    message = t(
        "training loss decreases slowly: {start} → {end} over {span}{lr}, {end} vs chance {chance} (ln {classes}, a "
        "uniform guess over {classes} classes): the model learns, slowly; to learn faster, raise the learning rate "
        "(e.g. 3×) or train longer",
        start=_fmt(trend.start),
        end=_fmt(trend.end),
        span=span,
        lr=_lr_text(lr),
        chance=f"{chance:.3g}",
        classes=classes,
    )
    details = {"diagnosis": "learning-slowly", "chance_level": round(chance, 6), "classes": classes, **evidence}
    return [Finding("dynamics", "info", message, *where, details=details)]


def diagnose_at_chance(curves: TrainingCurves) -> list[Finding]:
    """A classification loss that stays within ``AT_CHANCE_TOLERANCE`` of ln(classes) from the start of the run to its
    end, without swinging: the model does no better than a uniform guess (labels that no longer match their features,
    inputs that do not reach the model). Reported at the loss call when the agent saw it, else at ``backward()``."""
    known = _classification(curves)
    trend = loss_trend(curves.train_loss)
    if known is None or trend is None or curves.first_nonfinite_loss_step is not None or curves.adversarial:
        return []
    classes, chance, loss_call = known
    where = _where(loss_call, curves.loss_at, curves.optimizer_at)
    tolerance = AT_CHANCE_TOLERANCE * chance
    if where is None or trend.swing > OSCILLATION_SWING or abs(trend.end - chance) > tolerance:
        return []
    if trend.start < chance - tolerance or trend.best_smoothed(curves.train_loss) < chance - 2 * tolerance:
        return []  # it did get below chance at some point: it learned something
    steps = list(curves.train_steps)
    span = t("steps {0}–{1}", steps[0], steps[-1]) if steps else t("{0} steps", trend.steps)
    message = t(
        "training at chance level: the loss stays at {end} ≈ ln {classes} = {chance}, what a uniform guess over "
        "{classes} classes scores (accuracy ≈ 1/{classes} = {accuracy}%), from {start} to {end} over {span}: the model "
        "learns nothing from its inputs. Check that the labels still match their features (X and y shuffled, sorted "
        "or split separately, a wrong label column), that the inputs reach the model, and that the learning rate is "
        "not far too low",
        end=_fmt(trend.end),
        classes=classes,
        chance=f"{chance:.3g}",
        accuracy=f"{100.0 / classes:.3g}",
        start=_fmt(trend.start),
        span=span,
    )
    details = {
        "diagnosis": "at-chance",
        "chance_level": round(chance, 6),
        "classes": classes,
        "loss_start": round(trend.start, 6),
        "loss_end": round(trend.end, 6),
        "steps": trend.steps,
        "lr": curves.lr,
    }
    return [Finding("dynamics", "warning", message, *where, details=details)]


def diagnose_chance_level(curves: TrainingCurves) -> list[Finding]:
    """A cross-entropy over ``extra["classes"]`` classes whose second half sits above ``CHANCE_FACTOR`` × ln(classes).

    A model that guesses uniformly scores ln(classes) (4.6 nats over 100 tokens), and a freshly initialised one starts
    near it; ten times that means the right class gets e^-46 of the probability on average: the logits have blown
    up and the model is confidently wrong, the signature of a learning rate far too high even while the loss, pushed
    down by a decaying schedule, no longer rises.
    """
    classes = curves.extra.get("classes")
    where = _where(curves.optimizer_at, curves.loss_at)
    finite = [v for v in curves.train_loss if math.isfinite(v)]
    if not isinstance(classes, int) or classes < 2 or where is None or len(finite) < MIN_LOSS_STEPS:
        return []
    if curves.first_nonfinite_loss_step is not None:
        return []  # a loss that went NaN/Inf has its own verdict, which says more
    chance = math.log(classes)
    level = median(finite[len(finite) // 2 :])
    if not level > CHANCE_FACTOR * chance:
        return []
    lr = curves.extra.get("peak_lr") or curves.lr
    before_clip, clip = curves.extra.get("grad_norm_before_clipping"), curves.extra.get("clip_norm")
    clipped = ""
    if before_clip is not None and clip is not None and before_clip > clip:
        clipped = t("; gradient norms reached {0} before clipping to {1}", _fmt(before_clip), _fmt(clip))
    message = t(
        "training loss sits at {level}, {ratio}× the chance level of a cross-entropy over "
        "{classes} classes (ln {classes} = {chance}, what a uniform guess scores){lr}{clipped}: the "
        "logits have blown up and the model is confidently wrong; the learning rate is probably far too high: "
        "lower it (e.g. 100×) or add a warm-up",
        level=_fmt(level),
        ratio=_fmt(level / chance),
        classes=classes,
        chance=f"{chance:.3g}",
        lr=_lr_text(lr),
        clipped=clipped,
    )
    details = {
        "diagnosis": "above-chance",
        "loss_median": level,
        "chance_level": round(chance, 6),
        "classes": classes,
        "ratio": level / chance,
        "steps": len(finite),
        "lr": lr,
        "grad_norm_before_clipping": before_clip,
        "clip_norm": clip,
    }
    return [Finding("dynamics", "warning", message, *where, details=details)]


def diagnose_overfitting(curves: TrainingCurves) -> list[Finding]:
    """Validation loss rising from its best value while training loss keeps falling (not for an adversarial pair:
    a GAN's losses measure one side against the other, not how well the model fits its data; nor when the agent saw
    evaluation inputs on another scale than training inputs, ``extra["evaluation_inputs_differ"]``: that finding
    explains the rise)."""
    if curves.adversarial or curves.extra.get("evaluation_inputs_differ"):
        return []  # (the evaluation inputs are not on the training inputs' scale: a finding says so, and why val rose)
    val = [v for v in curves.val_loss if math.isfinite(v)]
    where = _where(curves.validation_at, curves.loss_at)
    if len(val) < MIN_VAL_POINTS or where is None or len(val) != len(curves.val_steps):
        return []
    best_index = min(range(len(val)), key=lambda i: val[i])
    after = val[best_index + 1 :]
    if len(after) < 2 or val[-1] < val[best_index] * (1.0 + OVERFIT_RISE) + 1e-12:
        return []
    if sum(1 for v in after if v > val[best_index]) < 0.75 * len(after):
        return []  # a dip, not a sustained rise
    best_step, last_step = int(curves.val_steps[best_index]), int(curves.val_steps[-1])
    train_at_best = _value_near(curves.train_steps, curves.train_loss, best_step)
    train_last = _value_near(curves.train_steps, curves.train_loss, last_step)
    if train_at_best is None or train_last is None or not train_last < train_at_best * 0.95:
        return []  # training loss is not falling: not the overfitting signature
    message = t(
        "overfitting: validation loss rose from its best {best} (step {best_step}) to "
        "{last} (step {last_step}) while training loss kept falling ({train_best} → "
        "{train_last}): stop early around step {best_step}, or add regularisation (weight decay, dropout, "
        "data augmentation) or more data",
        best=_fmt(val[best_index]),
        best_step=best_step,
        last=_fmt(val[-1]),
        last_step=last_step,
        train_best=_fmt(train_at_best),
        train_last=_fmt(train_last),
    )
    details = {
        "diagnosis": "overfitting",
        "val_best": round(val[best_index], 6),
        "val_best_step": best_step,
        "val_last": round(val[-1], 6),
        "train_at_best": round(train_at_best, 6),
        "train_last": round(train_last, 6),
        "val_points": len(val),
    }
    return [Finding("dynamics", "warning", message, *where, details=details)]


def _value_near(steps: Sequence[int], values: Sequence[float], step: int) -> float | None:
    """Median of the training values within a few points of ``step`` (robust to minibatch noise)."""
    if not steps:
        return None
    nearest = min(range(len(steps)), key=lambda i: abs(steps[i] - step))
    half = max(1, len(steps) // 40)
    window = [v for v in values[max(0, nearest - half) : nearest + half + 1] if math.isfinite(v)]
    return median(window) if window else None


def diagnose_vanishing(curves: TrainingCurves) -> list[Finding]:
    """The first layer's gradient norm orders of magnitude below the last layer's, over most of the run."""
    where = _where(curves.model_at, curves.loss_at)
    pairs = [
        (early, late)
        for early, late in zip(curves.early_grad_norm, curves.late_grad_norm, strict=False)
        if math.isfinite(early) and math.isfinite(late) and late > 0
    ]
    if len(pairs) < 3 or where is None or curves.early_layer is None or curves.late_layer is None:
        return []
    ratio = median([early / late for early, late in pairs])
    if ratio >= VANISHING_RATIO:
        return []
    early_median, late_median = median([p[0] for p in pairs]), median([p[1] for p in pairs])
    message = t(
        "gradients vanish before they reach the first layers: `{early_layer}` gets a gradient norm of "
        "{early} vs {late} at `{late_layer}` (ratio {ratio}, median over "
        "{steps} steps), so the early layers barely learn: use ReLU/GELU instead of sigmoid/tanh, add residual "
        "connections or normalisation (BatchNorm/LayerNorm), or a Kaiming/Xavier initialisation",
        early_layer=curves.early_layer,
        early=f"{early_median:.2g}",
        late=f"{late_median:.2g}",
        late_layer=curves.late_layer,
        ratio=f"{ratio:.1g}",
        steps=len(pairs),
    )
    details = {
        "diagnosis": "vanishing-gradients",
        "early_layer": curves.early_layer,
        "late_layer": curves.late_layer,
        "early_grad_norm": early_median,
        "late_grad_norm": late_median,
        "ratio": ratio,
        "steps": len(pairs),
    }
    return [Finding("dynamics", "warning", message, *where, details=details)]


def diagnose_exploding(curves: TrainingCurves) -> list[Finding]:
    """Total gradient norm non-finite, abnormally large, or grown by orders of magnitude during the run."""
    where = _where(curves.loss_at, curves.model_at)
    norms, steps = list(curves.grad_norm), list(curves.grad_steps)
    if where is None or not norms or len(norms) != len(steps):
        return []
    advice = t(
        "clip them with torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0) between loss.backward() "
        "and optimizer.step(), and/or lower the learning rate"
    )
    if curves.first_nonfinite_grad_step is not None:
        if nonfinite_cause(curves.nonfinite_origin) in ("data", "domain"):
            return []  # the loss finding names the origin; clipping would not help
        message = t("gradients exploded to NaN/Inf: {0}", advice)
        details = {"diagnosis": "exploding-gradients", "nonfinite_step": curves.first_nonfinite_grad_step}
        return [Finding("dynamics", "warning", message, *where, step=curves.first_nonfinite_grad_step, details=details)]
    finite = [(s, n) for s, n in zip(steps, norms, strict=True) if math.isfinite(n)]
    if len(finite) < 3:
        return []
    peak_step, peak = max(finite, key=lambda item: item[1])
    early = median([n for _, n in finite[: max(1, min(10, len(finite) // 10))]])
    grew = early > 0 and peak > EXPLODING_GROWTH * early
    losses = [abs(v) for v in (curves.train_loss or curves.run_loss) if math.isfinite(v)]
    loss_scale = median(losses) if losses else None
    if loss_scale is not None:  # huge relative to the loss it comes from (a summed loss has large norms, healthily)
        huge = peak > EXPLODING_NORM and peak > EXPLODING_LOSS_RATIO * loss_scale
    else:
        huge = peak > EXPLODING_NORM
    if not huge and not grew:
        return []
    clip = curves.extra.get("clip_norm")
    if isinstance(clip, (int, float)) and peak <= clip * CLIP_TOLERANCE:
        return _clipped_explosion(curves, where, peak_step, early, float(clip))
    scale_text = t(", {0}× the loss scale {1}", f"{peak / loss_scale:.3g}", f"{loss_scale:.3g}") if loss_scale else ""
    message = t(
        "gradients explode: the total gradient norm reached {peak} "
        "(median {early} at the start of the run{scale}): {advice}",
        peak=f"{peak:.3g}",
        early=f"{early:.3g}",
        scale=scale_text,
        advice=advice,
    )
    details = {
        "diagnosis": "exploding-gradients",
        "peak_grad_norm": peak,
        "peak_step": peak_step,
        "early_grad_norm": early,
        "loss_scale": loss_scale,
        "growth": peak / early if early > 0 else None,
    }
    return [Finding("dynamics", "warning", message, *where, step=peak_step, details=details)]


def _clipped_explosion(
    curves: TrainingCurves, where: Location, peak_step: int, early: float, clip: float
) -> list[Finding]:
    """Norms that grew up to the program's own ``clip_grad_norm_`` threshold: the clipping the advice would add is
    there and bounds every update, so it is information (how far they grew before clipping), not a warning."""
    before = curves.extra.get("grad_norm_before_clipping")
    message = t(
        "gradient norms grew from {early} to the clipping threshold {clip} (up to {before} before clipping): "
        "clip_grad_norm_ bounds each update",
        early=f"{early:.3g}",
        clip=f"{clip:.3g}",
        before=f"{before:.3g}" if isinstance(before, (int, float)) else "?",
    )
    details = {"diagnosis": "clipped-gradients", "clip_norm": clip, "grad_norm_before_clipping": before}
    return [Finding("dynamics", "info", message, *where, step=peak_step, details=details)]


LR_VERDICTS = ("diverging", "oscillating", "above-chance", "overshooting")  # loss verdicts that blame the lr


def diagnose_curves(curves: TrainingCurves) -> list[Finding]:
    """Every dynamics finding the recorded series support (none for a healthy run).

    A loss diverging or oscillating from a learning rate too high drags the gradients with it (huge norms, saturated
    early layers): one finding says so, with the gradient evidence in its details, instead of three. Gradients never
    cleared make the same symptoms: that optimizer's curves are not judged."""
    if curves.gradients_uncleared:  # growing sums of stale gradients: the training-logic finding explains them
        return diagnose_overfitting(curves)
    # one loss verdict, the most specific
    loss = diagnose_chance_level(curves) or diagnose_at_chance(curves) or diagnose_loss(curves)
    loss = loss or diagnose_overshoot(curves)
    gradients = [*diagnose_vanishing(curves), *diagnose_exploding(curves)]
    if loss and loss[0].details.get("diagnosis") in LR_VERDICTS and gradients:
        symptoms = {s.details["diagnosis"]: {k: v for k, v in s.details.items() if k != "diagnosis"} for s in gradients}
        loss = [replace(loss[0], details={**loss[0].details, **symptoms})]
        gradients = []
    return [*(_at_the_written_lr(f, curves) for f in loss), *diagnose_overfitting(curves), *gradients]


LR_CAUSES = (None, "overflow", "unknown")  # ``details["cause"]`` of a verdict that may blame the learning rate


def _at_the_written_lr(finding: Finding, curves: TrainingCurves) -> Finding:
    """A verdict that blames the learning rate, moved from the optimizer's line to the line that wrote the value
    (``lr_at``); the optimizer's line stays in its details."""
    details = finding.details
    if curves.lr_at is None or curves.optimizer_at is None or details.get("diagnosis") not in LR_VERDICTS:
        return finding
    if details.get("cause") not in LR_CAUSES or (finding.file, finding.line) != curves.optimizer_at:
        return finding
    moved = {**details, "optimizer_line": curves.optimizer_at[1]}
    if curves.optimizer_at[0] != curves.lr_at[0]:
        moved["optimizer"] = {"file": curves.optimizer_at[0], "line": curves.optimizer_at[1]}
    where = place_text(curves.optimizer_at[0], curves.optimizer_at[1], curves.lr_at[0])
    if curves.hand_written:
        said = t(
            "{0}. This default is the learning rate of the hand-written update at {1}",
            finding.message.rstrip("."),
            where,
        )
    else:
        said = t(
            "{0}. This default is the learning rate of the optimizer built at {1}", finding.message.rstrip("."), where
        )
    return replace(finding, message=said, file=curves.lr_at[0], line=curves.lr_at[1], details=moved)
