"""The measurement feature: zero-code measurement of the training loop, armed from the launch options.

``arm(origin)`` is called by ``tensorsight.agent.runtime.install`` (debugger or doctor) before user code runs. It
reads the
options, and does nothing else until the program imports torch; then it installs the phase clock and wires the
per-step pipeline: ``phases``, ``scalars``, ``histogram`` and ``memory`` events, the evaluation watch (validation
losses written with ``torch.nn.functional``; train-mode evaluation as ``training-logic`` findings), the data checks
(classes a classification loss scores, targets equal to inputs, input statistics per split), the training log
file, TensorBoard event files, and — at the end of the run (the doctor's ``run-finished`` event, or process exit) —
curve diagnosis and phase verdicts as findings.

Each optimizer has its own curves (``OptimizerCurves``): a GAN's discriminator and generator losses, or an
actor-critic's two losses, are two series with a verdict each, and the losses backpropagated before an optimizer's
step belong to that optimizer. Two optimizers whose losses reach each other's parameters (the generator's loss runs
through the discriminator) are adversarial: their losses oscillate by nature, so they get no oscillation, spike or
divergence verdict. The NaN sentinel's ``nonfinite`` findings are read from the event bus, so the advice for a loss
that went NaN follows its origin (the data, a ``log(0)``) rather than blaming the learning rate.

Launch options (camelCase, in ``TENSORSIGHT_OPTIONS`` or the doctor's ``--set KEY=VALUE``; types and defaults are
declared in ``tensorsight.core.protocol.LAUNCH_OPTIONS``, which this module reads them from):

- ``measure`` (true): master switch; on by default in a debug session and in the doctor.
- ``phases`` (true): time data / forward / backward / optimizer / other per step (``phases`` events).
- ``scalarsEvery`` (1): loss, lr and gradient norms every N steps (``scalars`` events); 0 turns them off.
- ``gradNormsPerParameter`` (true): also one gradient norm per parameter (``grad_norm/<name>``).
- ``histogramEvery`` (100): weight and gradient histograms at the first step and every N steps (``histogram``
  events), and once at the first step whose gradients or loss are NaN/Inf (before the optimizer applies them, when
  the gradient norm shows it: the weights that were still finite, the gradients that were not); 0 turns them off.
- ``memory`` (true): process RSS, CUDA allocated/reserved/peak and NVML device memory per step (``memory``
  events); retained autograd graphs; ranked remedies on out-of-memory errors.
- ``traceMemory`` (false): start ``tracemalloc`` at launch, so ``tensorsight.memory_top()`` sees the whole run.
- ``logFile`` (none): write a training log (timestamps and levels: step, loss, lr; WARNING on loss spikes, ERROR on
  NaN/Inf) to this file; ``logLevel`` ("INFO") is its level.
- ``tensorboardDir`` (none): write TensorBoard event files to this folder (scalars every step, histograms every
  ``histogramEvery`` steps).
- ``diagnoseCurves`` (true): at the end of the run, ``dynamics`` findings from the recorded curves.
- ``dataShareThreshold`` (0.5): data loading above this share of the step is a ``performance`` finding.
"""

from __future__ import annotations

import atexit
import linecache
import math
import os
import re
import sys
import tracemalloc
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from tensorsight.agent.measurement.learning import hand_update_at
from tensorsight.agent.runtime import events, steps
from tensorsight.agent.runtime.guard import never_raise, report_once
from tensorsight.agent.runtime.lazy_import import when_imported
from tensorsight.agent.runtime.options import option
from tensorsight.agent.runtime.user_code import user_frames
from tensorsight.core import protocol
from tensorsight.core.curves import Series, TrainingCurves, diagnose_curves
from tensorsight.core.phases import DATA_DOMINANT_SHARE, PHASES, PhaseTally, phase_verdicts
from tensorsight.core.protocol import option_default


@dataclass(frozen=True)
class MeasureSettings:
    """The launch options of this feature, validated."""

    phases: bool = True
    scalars_every: int = 1
    grad_norms_per_parameter: bool = True
    histogram_every: int = 100
    memory: bool = True
    trace_memory: bool = False
    log_file: str | None = None
    log_level: str = "INFO"
    tensorboard_dir: str | None = None
    diagnose_curves: bool = True
    data_share_threshold: float = DATA_DOMINANT_SHARE


def _bool(name: str) -> bool:
    default: bool = option_default(name)
    value = option(name, default)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no", "on", "off"):
        return value.lower() in ("true", "1", "yes", "on")
    report_once(f"option-{name}", f"option {name} should be true or false, got {value!r}; using {default}")
    return default


def _count(name: str) -> int:
    default: int = option_default(name)
    value = option(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        report_once(f"option-{name}", f"option {name} should be a number of steps, got {value!r}; using {default}")
        return default
    try:
        number = int(value)
    except ValueError:
        report_once(f"option-{name}", f"option {name} should be a number of steps, got {value!r}; using {default}")
        return default
    if number < 0:
        report_once(f"option-{name}", f"option {name} cannot be negative ({number}); using 0 (off)")
        return 0
    return number


def _path(name: str) -> str | None:
    value = option(name)
    if value in (None, "", False):
        return None
    if not isinstance(value, str):
        report_once(f"option-{name}", f"option {name} should be a path, got {value!r}; ignoring it")
        return None
    return os.path.abspath(os.path.expanduser(value))


def _share(name: str) -> float:
    default: float = option_default(name)
    value = option(name, default)
    try:
        share = float(value)
    except (TypeError, ValueError):
        share = -1.0
    if not 0.0 < share < 1.0:
        report_once(f"option-{name}", f"option {name} should be a share between 0 and 1, got {value!r}")
        return default
    return share


@dataclass
class OptimizerCurves:
    """The series of one optimizer (or of the hand-written update): its losses, gradient norms and learning rate.

    Holds no reference to the optimizer (the program's objects are freed when the program drops them)."""

    key: int
    parameters: frozenset[int]
    optimizer_at: tuple[str, int] | None = None
    hand_written: bool = False
    name: str | None = None  # the variable the user's line assigned it to (``optimizerG``)
    loss: Series = field(default_factory=Series)
    grad_norm: Series = field(default_factory=Series)
    early_grad: Series = field(default_factory=Series)
    late_grad: Series = field(default_factory=Series)
    layers: tuple[str | None, str | None] = (None, None)
    last_lr: float | None = None
    written_lr: float | None = None  # the learning rate it was built with (a scheduler's ``initial_lr``)
    lr_at_nonfinite: float | None = None  # the learning rate of the step whose loss was first NaN/Inf
    reached: set[int] = field(default_factory=set)  # parameters its losses reached (sampled)


def _built_lr(optimizer: Any) -> float | None:
    """The learning rate of the optimizer's first group as it was built (before any scheduler changed it)."""
    try:
        group = optimizer.param_groups[0]
        lr = group.get("initial_lr", group.get("lr"))
    except Exception:  # noqa: BLE001 - a custom optimizer without param groups
        return None
    return float(lr) if isinstance(lr, (int, float)) and not isinstance(lr, bool) else None


def _lr_default_at(
    optimizer_at: tuple[str, int] | None, lr: float | None, peak_lr: float | None = None, script: str | None = None
) -> tuple[str, int] | None:
    """The ``add_argument`` line whose default gave the optimizer its learning rate (``core.argparse_defaults``):
    the ``args.lr`` of the optimizer's own call, else the one learning-rate argument of the optimizer's file or of
    the program's script whose default is the learning rate it was built with or the highest it stepped with (a
    schedule written by hand sets each step's rate from it)."""
    from tensorsight.core.argparse_defaults import default_written_at, learning_rate_default_at

    if optimizer_at is None:
        return None
    source = "".join(linecache.getlines(optimizer_at[0]))
    line = default_written_at(source, optimizer_at[1], "lr", lr) if source and lr is not None else None
    if line is not None:
        return optimizer_at[0], line
    for file in dict.fromkeys((optimizer_at[0], *((script,) if script is not None else ()))):
        text = "".join(linecache.getlines(file))
        for value in dict.fromkeys(v for v in (lr, peak_lr) if v is not None):
            line = learning_rate_default_at(text, value) if text else None
            if line is not None:
                return file, line
    return None


_LEARNING_RATE_NAME = re.compile(r"^(lr|learning_rate|\w+_lr|lr_\w+)$", re.IGNORECASE)
MAX_RATE_FRAMES = 6  # user frames searched for a hand-written update's learning rate


def _learning_rate_in_frames(frame: Any) -> float | None:
    """The learning rate a hand-written update uses, as the program holds it: the first positive number under a
    learning-rate name (``lr``, ``learning_rate``, ``base_lr``) among the variables of the innermost user frames, or
    in an ``argparse.Namespace`` there (``args.lr``). Read, never run (``__dict__`` of a namespace only)."""
    import argparse

    for user in user_frames(frame, MAX_RATE_FRAMES):
        names = list(user.f_locals.items())
        names += [item for _, v in names if type(v) is argparse.Namespace for item in vars(v).items()]
        for name, value in names:
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                if _LEARNING_RATE_NAME.match(name):
                    return float(value)
    return None


_ASSIGNED = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(?::[^=]+)?=[^=]")


def assigned_name(where: tuple[str, int] | None) -> str | None:
    """``optimizerG`` for the source line ``optimizerG = optim.Adam(...)`` (None when the line is no assignment)."""
    if where is None:
        return None
    match = _ASSIGNED.match(linecache.getline(where[0], where[1]))
    return match.group(1) if match else None


def adversarial_pairs(series: list[OptimizerCurves]) -> set[int]:
    """Indexes of the optimizers with losses of their own whose losses reach another such optimizer's parameters
    (both sides of the pair are returned)."""
    owning = [i for i, s in enumerate(series) if len(s.loss)]
    out: set[int] = set()
    for i in owning:
        for j in owning:
            if i != j and series[i].reached & series[j].parameters:
                out.update((i, j))
    return out


def read_settings() -> MeasureSettings:
    """The feature's options from the launch options, with a clear message for each wrong value."""
    level = option("logLevel")
    return MeasureSettings(
        phases=_bool("phases"),
        scalars_every=_count("scalarsEvery"),
        grad_norms_per_parameter=_bool("gradNormsPerParameter"),
        histogram_every=_count("histogramEvery"),
        memory=_bool("memory"),
        trace_memory=_bool("traceMemory"),
        log_file=_path("logFile"),
        log_level=str(level).upper() if isinstance(level, (str, int)) else "INFO",
        tensorboard_dir=_path("tensorboardDir"),
        diagnose_curves=_bool("diagnoseCurves"),
        data_share_threshold=_share("dataShareThreshold"),
    )


class Measurement:
    """The per-step pipeline; one per process, created after torch is imported."""

    def __init__(self, torch: ModuleType, settings: MeasureSettings) -> None:
        from tensorsight.agent.measurement.data_checks import DataWatch
        from tensorsight.agent.measurement.evaluation import EvaluationWatch
        from tensorsight.agent.measurement.frameworks import FrameworkWatch
        from tensorsight.agent.measurement.gradient_clearing import ClearingWatch
        from tensorsight.agent.measurement.heldout_rows import HeldOutRowsWatch
        from tensorsight.agent.measurement.learning import LearningWatch
        from tensorsight.agent.measurement.memory import MemoryMonitor, set_context
        from tensorsight.agent.measurement.phases import PhaseClock, caller_location
        from tensorsight.agent.measurement.scalars import ScalarRecorder
        from tensorsight.agent.measurement.training_log import TrainingLog, setup_logging
        from tensorsight.agent.measurement.update_size import UpdateSizes

        self.torch = torch
        self.settings = settings
        self.clock = PhaseClock(torch)
        # functional validation losses, train-mode evaluation (not on the two sides of a GAN)
        self.evaluation = EvaluationWatch(torch, self.clock, self.adversarial_parameters)
        self.frameworks = FrameworkWatch(torch)  # closure steps, peak lr, gradient norms before clipping
        # classes scored, targets equal to inputs, input statistics per split
        self.data = DataWatch(torch, self.clock, self.evaluation, events.emit_finding)
        # a training loss over the rows an evaluation mask holds out
        self.heldout_rows = HeldOutRowsWatch(torch, self.clock, self.evaluation, events.emit_finding)
        self.clearing = ClearingWatch(
            torch, lambda: self.clock.backwards, lambda: caller_location(sys._getframe()), events.emit_finding
        )
        self.clock.backward_listeners.append(self.clearing.backward_seen)
        # parameters that never learn, backward in eval mode, hand-written updates on uncleared gradients
        self.learning = LearningWatch(
            torch, self.clock, events.emit_finding, self.clearing.reported, lambda o: self._series_of(o).name
        )
        self.updates = UpdateSizes(torch)  # relative size of each optimizer's first updates
        self.recorder = ScalarRecorder(torch, self.clock.models, settings.grad_norms_per_parameter)
        self.monitor = MemoryMonitor(torch) if settings.memory else None
        set_context(self.monitor, lambda: self.clock.in_eval_forward_with_grad)
        self.log = TrainingLog(_open_log(settings, setup_logging))
        self.writer: Any = None
        if settings.tensorboard_dir:
            from tensorsight.agent.measurement.tensorboard_writer import open_writer

            self.writer = open_writer(settings.tensorboard_dir)
        self.per_optimizer: dict[int, OptimizerCurves] = {}
        self.script: str | None = None  # the program's main file (where its command-line arguments are declared)
        self.val_loss = Series()
        self.nonfinite_origin: dict[str, Any] | None = None  # the sentinel's first nonfinite finding
        self.phase_tally = PhaseTally()
        self.waiting_tally = PhaseTally()  # run-queue seconds per step ("data", "step"), the same steps apart
        self.histograms_at: int | None = None  # the last step histograms were recorded at
        self.nonfinite_histograms = False  # the histograms of the first NaN/Inf step are recorded
        self.finished = False

    def start(self) -> None:
        self.frameworks.install()  # before the clock's step pre-hook, which asks it
        self.clock.install()
        self.evaluation.install()
        self.data.install()
        self.heldout_rows.install()
        self.clearing.install()
        self.learning.install()
        self.clock.before_step_listeners.append(self._before_step)
        self.clock.step_listeners.append(self._on_step)
        self.clock.validation_listeners.append(self._on_validation)

    def stop(self) -> None:
        """Take every hook out again (used by the benchmark to compare armed and unarmed steps in one process)."""
        self.data.uninstall()
        self.heldout_rows.uninstall()
        self.evaluation.uninstall()
        self.clock.uninstall()
        self.frameworks.uninstall()
        self.clearing.uninstall()
        self.learning.uninstall()

    def _due(self, every: int, step: int) -> bool:
        return every > 0 and step % every == 0

    def _before_step(self, optimizer: Any, step: int) -> None:
        closure = self.frameworks.ran_closure(optimizer)
        if not isinstance(optimizer, steps.HandWrittenUpdate):
            self.clearing.before_step(optimizer, self._series_of(optimizer).name, closure)
            if not closure:  # a closure optimizer (L-BFGS) searches its step: large first moves are its way
                self.updates.before(optimizer)
        if self._due(self.settings.scalars_every, step) and not closure:
            self.recorder.before_step(optimizer)
            norm = self.recorder.total_norm
            if norm is not None and not math.isfinite(norm):
                self._record_nonfinite_histograms(step)

    @never_raise()
    def _on_step(self, record: Any) -> None:
        from tensorsight.agent.measurement.memory import retained_scan_due
        from tensorsight.agent.measurement.phases import caller_frame
        from tensorsight.agent.measurement.scalars import learning_rate

        step = record.step
        self.updates.after(record.optimizer)
        if self.settings.phases:
            self._record_phases(record)
        loss = record.loss
        lr = learning_rate(record.optimizer)
        series = self._series_of(record.optimizer)
        series.last_lr = lr if lr is not None else series.last_lr
        series.reached |= record.reached
        if loss is not None:
            series.loss.add(step, loss)
            if series.loss.first_nonfinite_step == step and series.lr_at_nonfinite is None:
                series.lr_at_nonfinite = lr
        grad_norm = None
        if self._due(self.settings.scalars_every, step):
            if self.frameworks.ran_closure(record.optimizer):  # the closure's backward ran inside the step
                with self.torch._C.DisableTorchFunction():  # our read: no mode (the NaN sentinel's) takes it for an op
                    self.recorder.before_step(record.optimizer)
            values = self.recorder.values(loss, lr)
            grad_norm = self.recorder.total_norm
            self._record_gradients(series, step)
            if values:
                events.send(protocol.ScalarsEvent(step=step, split="train", values=values))
                if self.writer is not None:
                    self.writer.scalars(step, {_train_tag(k): v for k, v in values.items()})
        spikes = len(self.per_optimizer) < 2 or self._index_of(series) not in self._adversarial()
        self.log.step(step, loss, lr, grad_norm, series=id(series), spikes=spikes)
        if loss is not None and not math.isfinite(loss):
            self._record_nonfinite_histograms(step)
        if self.settings.histogram_every > 0 and (step == 1 or self._due(self.settings.histogram_every, step)):
            self._record_histograms(step)
        if self.monitor is not None:
            figures = self.monitor.sample(step)
            if figures:
                events.send(protocol.MemoryEvent(step=step, **figures))
            if retained_scan_due(step):
                for finding in self.monitor.scan_retained_graphs(caller_frame(sys._getframe(1)), step):
                    events.emit_finding(finding)

    def _record_phases(self, record: Any) -> None:
        seconds = record.seconds
        file, line = record.loop_at if record.loop_at is not None else (None, None)
        events.send(
            protocol.PhasesEvent(
                step=record.step,
                seconds=dict(seconds),
                eval_seconds=record.eval_seconds or None,
                file=file,
                line=line,
            )
        )
        if self.writer is not None:
            self.writer.scalars(record.step, {f"time/{name}_ms": seconds[name] * 1000.0 for name in PHASES})
        self.phase_tally.add(record.step, seconds)
        self.waiting_tally.add(record.step, getattr(record, "waited", None) or {})

    def _series_of(self, optimizer: Any) -> OptimizerCurves:
        series = self.per_optimizer.get(id(optimizer))
        if series is None:
            try:
                params = frozenset(id(p) for group in optimizer.param_groups for p in group["params"])
            except Exception:  # noqa: BLE001 - a custom optimizer without param groups
                params = frozenset()
            hand_written = isinstance(optimizer, steps.HandWrittenUpdate)
            at = None if hand_written else self.clock.optimizer_at(optimizer)
            series = OptimizerCurves(id(optimizer), params, at, hand_written, assigned_name(at))
            series.written_lr = _built_lr(optimizer) if not hand_written else _learning_rate_in_frames(sys._getframe(1))
            script = getattr(sys.modules.get("__main__"), "__file__", None)  # the program's, while it runs
            if isinstance(script, str) and self.script is None:
                self.script = os.path.abspath(script)
            self.per_optimizer[id(optimizer)] = series
        return series

    def _index_of(self, series: OptimizerCurves) -> int:
        return list(self.per_optimizer.values()).index(series)

    def _adversarial(self) -> set[int]:
        return adversarial_pairs(list(self.per_optimizer.values()))

    def adversarial_parameters(self) -> set[int]:
        """Ids of the parameters of every optimizer in an adversarial pair (a GAN's generator and discriminator)."""
        series = list(self.per_optimizer.values())
        return {p for index in self._adversarial() for p in series[index].parameters}

    def _record_gradients(self, series: OptimizerCurves, step: int) -> None:
        recorder = self.recorder
        if recorder.total_norm is not None:
            series.grad_norm.add(step, recorder.total_norm)
        if recorder.early_layer is not None and recorder.late_layer is not None:
            series.layers = (recorder.early_layer[0], recorder.late_layer[0])
            series.early_grad.add(step, recorder.early_layer[1])
            series.late_grad.add(step, recorder.late_layer[1])

    def _record_nonfinite_histograms(self, step: int) -> None:
        """The histograms of the first step with a NaN/Inf gradient norm or loss, once (later steps of a run that
        stayed NaN have their histograms on the usual schedule)."""
        if self.nonfinite_histograms or self.settings.histogram_every == 0:
            return
        self.nonfinite_histograms = True
        self._record_histograms(step)

    def _record_histograms(self, step: int) -> None:
        if self.histograms_at == step or (self.writer is None and not events.wanted(protocol.HistogramEvent.TYPE)):
            return  # nobody reads them (the doctor): not computed
        self.histograms_at = step
        for histogram in self.recorder.histograms():
            events.send(
                protocol.HistogramEvent(
                    step=step,
                    name=histogram["name"],
                    kind=histogram["kind"],
                    edges=histogram["edges"],
                    counts=histogram["counts"],
                    nonfinite=protocol.NonfiniteCounts(**histogram["nonfinite"]),
                )
            )
            if self.writer is not None:
                tag = f"{'weights' if histogram['kind'] == 'weight' else 'grads'}/{histogram['name']}"
                self.writer.histogram(step, tag, histogram["edges"], histogram["counts"], histogram["stats"])

    @never_raise()
    def _on_validation(self, step: int, loss: float, batches: int) -> None:
        self.val_loss.add(step, loss)
        events.send(protocol.ScalarsEvent(step=step, split="val", values={"loss": loss}, batches=batches))
        if self.writer is not None:
            self.writer.scalars(step, {"val/loss": loss})
        self.log.validation(step, loss)

    # --------------------------------------------------------------------------------------------- end of run
    def curves(self) -> TrainingCurves:
        """The curves of the optimizer with the most losses (the whole run when there is one optimizer)."""
        every = self.curves_per_optimizer()
        return max(every, key=lambda c: len(c.train_loss)) if every else self._curves_of(None, True, False)

    def curves_per_optimizer(self) -> list[TrainingCurves]:
        """One ``TrainingCurves`` per optimizer that took a step; validation goes with the one with most losses."""
        series = list(self.per_optimizer.values())
        if not series:
            return []
        adversarial = self._adversarial()
        main = max(range(len(series)), key=lambda i: len(series[i].loss))
        named = len([s for s in series if len(s.loss)]) > 1
        every = [self._curves_of(s, i == main, i in adversarial, named) for i, s in enumerate(series)]
        for curves in every:
            curves.run_loss = series[main].loss.values
        return every

    def _curves_of(
        self, series: OptimizerCurves | None, with_validation: bool, adversarial: bool, named: bool = False
    ) -> TrainingCurves:
        clock = self.clock
        if series is None:
            series = OptimizerCurves(0, frozenset(), clock.optimizer_at())
        optimizer_at = series.optimizer_at
        if series.hand_written:  # no optimizer line: the update's own line, else the backward() line
            optimizer_at = hand_update_at(clock.loss_at)
        return TrainingCurves(
            train_loss=series.loss.values,
            train_steps=series.loss.steps,
            val_loss=self.val_loss.values if with_validation else (),
            val_steps=self.val_loss.steps if with_validation else (),
            grad_norm=series.grad_norm.values,
            grad_steps=series.grad_norm.steps,
            early_layer=series.layers[0],
            late_layer=series.layers[1],
            early_grad_norm=series.early_grad.values,
            late_grad_norm=series.late_grad.values,
            lr=series.lr_at_nonfinite if series.lr_at_nonfinite is not None else series.last_lr,
            first_nonfinite_loss_step=series.loss.first_nonfinite_step,
            first_nonfinite_grad_step=series.grad_norm.first_nonfinite_step,
            loss_at=clock.loss_at,
            optimizer_at=optimizer_at,
            lr_at=_lr_default_at(optimizer_at, series.written_lr, self.frameworks.steps.peak_lr, self.script),
            validation_at=clock.validation_at,
            model_at=clock.model_at,
            extra={
                **self.frameworks.curve_extra(clock.output_classes),
                **self.data.curve_extra(),
                "early_update_ratios": self.updates.ratios.get(series.key, []),
            },
            optimizer_name=series.name if named else None,
            adversarial=adversarial,
            hand_written=series.hand_written,
            # a training-logic finding explains this optimizer's curves (stale gradients, parameters that never learn)
            gradients_uncleared=series.key in self.clearing.reported or series.key in self.learning.explained,
            nonfinite_origin=self.nonfinite_origin,
        )

    @never_raise()
    def note_event(self, event: dict[str, Any]) -> None:
        """Keep the sentinel's first NaN/Inf origin (the curve advice depends on where it came from)."""
        if event.get("type") != "finding" or self.nonfinite_origin is not None:
            return
        finding = event.get("finding")
        if isinstance(finding, dict) and finding.get("kind") == "nonfinite":
            self.nonfinite_origin = finding

    def phase_totals(self) -> tuple[dict[str, float], int]:
        """Phase seconds of the run and the steps they cover (``PhaseTally.breakdown``: the first step apart)."""
        totals, steps = self.phase_tally.breakdown()
        return {name: totals.get(name, 0.0) for name in PHASES}, steps

    @never_raise()
    def finish(self, error: str | None = None) -> None:
        """Diagnose the run once: phase verdicts and curve findings, then close the files."""
        if self.finished:
            return
        self.finished = True
        self.clock.finish()
        self.evaluation.finish(failed=bool(error))
        self.learning.finish()
        findings = [
            *self.data.normalization_findings(),
            *self.data.copy_target_findings(),
            *self.data.target_in_inputs_findings(),
        ]
        if self.settings.phases:
            totals, steps_measured = self.phase_totals()
            if steps_measured:
                where = self.clock.loop_at or self.clock.model_at
                file, line = where if where is not None else (None, None)
                events.send(protocol.PhaseSummaryEvent(steps=steps_measured, seconds=totals, file=file, line=line))
            findings.extend(
                phase_verdicts(
                    totals,
                    steps_measured,
                    self.clock.loader_settings(),
                    uses_gpu=self.clock.uses_cuda,
                    cpu_count=os.cpu_count(),
                    data_share_threshold=self.settings.data_share_threshold,
                    waited=self.waiting_tally.breakdown()[0],
                )
            )
        if self.settings.diagnose_curves:
            for curves in self.curves_per_optimizer():
                findings.extend(diagnose_curves(curves))
        for finding in findings:
            events.emit_finding(finding)
        if self.writer is not None:
            self.writer.close()
        self.log.close()


def _train_tag(key: str) -> str:
    return key if key.startswith("grad_norm/") else f"train/{key}"


_measurement: Measurement | None = None
_armed = False


def current() -> Measurement | None:
    """The running measurement (None until torch is imported with ``measure`` on)."""
    return _measurement


def _open_log(settings: MeasureSettings, setup_logging: Any) -> Any:
    """The ``logFile`` logger, or None: a log file that cannot be opened costs the log, never the measurement."""
    if not settings.log_file:
        return None
    try:
        return setup_logging(settings.log_file, settings.log_level)
    except OSError as exc:
        report_once(
            "measure-log-file",
            f"cannot write the training log to {settings.log_file} ({exc}); measuring goes on without the log file",
        )
        return None


def _start(torch: ModuleType, settings: MeasureSettings) -> None:
    global _measurement
    if _measurement is not None:
        return
    measurement = Measurement(torch, settings)
    measurement.start()
    _measurement = measurement
    if settings.memory:
        from tensorsight.agent.measurement.memory import explain_out_of_memory
        from tensorsight.agent.runtime.excepthook import register_explainer

        register_explainer(explain_out_of_memory)
    from tensorsight.agent.measurement.learning import explain_graph_reuse
    from tensorsight.agent.runtime.excepthook import register_explainer as register

    register(explain_graph_reuse)

    def on_event(event: dict[str, Any]) -> None:
        if event.get("type") == "run-finished":
            measurement.finish(event.get("error"))
        elif event.get("type") == "finding":
            measurement.note_event(event)

    events.subscribe(on_event, ("run-finished", "finding"))
    atexit.register(measurement.finish)


def arm(origin: str = "debugger") -> None:
    """Read the options; when ``measure`` is on, start measuring as soon as the program imports torch."""
    global _armed
    if _armed or not _bool("measure"):
        return
    _armed = True
    settings = read_settings()
    # The shared step counter must hook torch before we do (our step listener reads its count); arming it now, before
    # the program imports torch, also keeps its post-import hook from being registered while torch is initialising.
    steps.arm(origin)
    if settings.trace_memory and not tracemalloc.is_tracing():
        tracemalloc.start(1)
    when_imported("torch", lambda torch: _start(torch, settings))
