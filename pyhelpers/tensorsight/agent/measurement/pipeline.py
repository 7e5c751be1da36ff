"""The measurement feature: zero-code measurement of the training loop, armed from the launch options.

``arm(origin)`` is called by ``tensorsight.agent.runtime.install`` (debugger or doctor) before user code runs. It
reads the
options, and does nothing else until the program imports torch; then it installs the phase clock and wires the
per-step pipeline: ``phases``, ``scalars``, ``histogram`` and ``memory`` events, the training log file, TensorBoard
event files, and — at the end of the run (the doctor's ``run-finished`` event, or process exit) — curve diagnosis and
phase verdicts as findings.

Launch options (camelCase, in ``TENSORSIGHT_OPTIONS`` or the doctor's ``--set KEY=VALUE``; types and defaults are
declared in ``tensorsight.core.protocol.LAUNCH_OPTIONS``, which this module reads them from):

- ``measure`` (true): master switch; on by default in a debug session and in the doctor.
- ``phases`` (true): time data / forward / backward / optimizer / other per step (``phases`` events).
- ``scalarsEvery`` (1): loss, lr and gradient norms every N steps (``scalars`` events); 0 turns them off.
- ``gradNormsPerParameter`` (true): also one gradient norm per parameter (``grad_norm/<name>``).
- ``histogramEvery`` (100): weight and gradient histograms every N steps (``histogram`` events); 0 turns them off.
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
import os
import sys
import tracemalloc
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from tensorsight.agent.runtime import events, steps
from tensorsight.agent.runtime.guard import never_raise, report_once
from tensorsight.agent.runtime.lazy_import import when_imported
from tensorsight.agent.runtime.options import option
from tensorsight.core.curves import Series, TrainingCurves, diagnose_curves
from tensorsight.core.phases import DATA_DOMINANT_SHARE, MIN_STEPS_FOR_VERDICT, PHASES, phase_verdicts
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
        from tensorsight.agent.measurement.memory import MemoryMonitor, set_context
        from tensorsight.agent.measurement.phases import PhaseClock
        from tensorsight.agent.measurement.scalars import ScalarRecorder
        from tensorsight.agent.measurement.training_log import TrainingLog, setup_logging

        self.torch = torch
        self.settings = settings
        self.clock = PhaseClock(torch)
        self.recorder = ScalarRecorder(torch, self.clock.models, settings.grad_norms_per_parameter)
        self.monitor = MemoryMonitor(torch) if settings.memory else None
        set_context(self.monitor, lambda: self.clock.in_eval_forward_with_grad)
        self.log = TrainingLog(_open_log(settings, setup_logging))
        self.writer: Any = None
        if settings.tensorboard_dir:
            from tensorsight.agent.measurement.tensorboard_writer import open_writer

            self.writer = open_writer(settings.tensorboard_dir)
        self.train_loss = Series()
        self.val_loss = Series()
        self.grad_norm = Series()
        self.early_grad = Series()
        self.late_grad = Series()
        self.layers: tuple[str | None, str | None] = (None, None)
        self.last_lr: float | None = None
        self.totals = dict.fromkeys(PHASES, 0.0)
        self.first_step_seconds = dict.fromkeys(PHASES, 0.0)
        self.measured_steps = 0
        self.finished = False

    def start(self) -> None:
        self.clock.install()
        self.clock.before_step_listeners.append(self._before_step)
        self.clock.step_listeners.append(self._on_step)
        self.clock.validation_listeners.append(self._on_validation)

    def stop(self) -> None:
        """Take every hook out again (used by the benchmark to compare armed and unarmed steps in one process)."""
        self.clock.uninstall()

    def _due(self, every: int, step: int) -> bool:
        return every > 0 and step % every == 0

    def _before_step(self, optimizer: Any, step: int) -> None:
        if self._due(self.settings.scalars_every, step):
            self.recorder.before_step(optimizer)

    @never_raise()
    def _on_step(self, record: Any) -> None:
        from tensorsight.agent.measurement.phases import caller_frame
        from tensorsight.agent.measurement.scalars import learning_rate

        step = record.step
        if self.settings.phases:
            self._record_phases(record)
        loss = record.loss
        lr = learning_rate(record.optimizer)
        self.last_lr = lr if lr is not None else self.last_lr
        if loss is not None:
            self.train_loss.add(step, loss)
        grad_norm = None
        if self._due(self.settings.scalars_every, step):
            values = self.recorder.values(loss, lr)
            grad_norm = self.recorder.total_norm
            self._record_gradients(step)
            if values:
                events.emit("scalars", step=step, split="train", values=values)
                if self.writer is not None:
                    self.writer.scalars(step, {_train_tag(k): v for k, v in values.items()})
        self.log.step(step, loss, lr, grad_norm)
        if self._due(self.settings.histogram_every, step):
            self._record_histograms(step)
        if self.monitor is not None:
            figures = self.monitor.sample(step)
            if figures:
                events.emit("memory", step=step, **figures)
            for finding in self.monitor.scan_retained_graphs(caller_frame(sys._getframe(1)), step):
                events.emit_finding(finding)

    def _record_phases(self, record: Any) -> None:
        seconds = record.seconds
        data: dict[str, Any] = {"step": record.step, "seconds": dict(seconds)}
        if record.eval_seconds:
            data["eval_seconds"] = record.eval_seconds
        if record.loop_at is not None:
            data["file"], data["line"] = record.loop_at
        events.emit("phases", **data)
        if self.writer is not None:
            self.writer.scalars(record.step, {f"time/{name}_ms": seconds[name] * 1000.0 for name in PHASES})
        if record.step == 1:
            self.first_step_seconds = dict(seconds)
            return  # the first step pays for worker start-up and lazy initialisation: kept apart
        for name in PHASES:
            self.totals[name] += seconds[name]
        self.measured_steps += 1

    def _record_gradients(self, step: int) -> None:
        recorder = self.recorder
        if recorder.total_norm is not None:
            self.grad_norm.add(step, recorder.total_norm)
        if recorder.early_layer is not None and recorder.late_layer is not None:
            self.layers = (recorder.early_layer[0], recorder.late_layer[0])
            self.early_grad.add(step, recorder.early_layer[1])
            self.late_grad.add(step, recorder.late_layer[1])

    def _record_histograms(self, step: int) -> None:
        for histogram in self.recorder.histograms():
            events.emit(
                "histogram",
                step=step,
                name=histogram["name"],
                kind=histogram["kind"],
                edges=histogram["edges"],
                counts=histogram["counts"],
            )
            if self.writer is not None:
                tag = f"{'weights' if histogram['kind'] == 'weight' else 'grads'}/{histogram['name']}"
                self.writer.histogram(step, tag, histogram["edges"], histogram["counts"], histogram["stats"])

    @never_raise()
    def _on_validation(self, step: int, loss: float, batches: int) -> None:
        self.val_loss.add(step, loss)
        events.emit("scalars", step=step, split="val", values={"loss": loss}, batches=batches)
        if self.writer is not None:
            self.writer.scalars(step, {"val/loss": loss})
        self.log.validation(step, loss)

    # --------------------------------------------------------------------------------------------- end of run
    def curves(self) -> TrainingCurves:
        clock = self.clock
        return TrainingCurves(
            train_loss=self.train_loss.values,
            train_steps=self.train_loss.steps,
            val_loss=self.val_loss.values,
            val_steps=self.val_loss.steps,
            grad_norm=self.grad_norm.values,
            grad_steps=self.grad_norm.steps,
            early_layer=self.layers[0],
            late_layer=self.layers[1],
            early_grad_norm=self.early_grad.values,
            late_grad_norm=self.late_grad.values,
            lr=self.last_lr,
            first_nonfinite_loss_step=self.train_loss.first_nonfinite_step,
            first_nonfinite_grad_step=self.grad_norm.first_nonfinite_step,
            loss_at=clock.loss_at,
            optimizer_at=clock.optimizer_at(),
            validation_at=clock.validation_at,
            model_at=clock.model_at,
        )

    def phase_totals(self) -> tuple[dict[str, float], int]:
        """Phase seconds summed over the measured steps (the first step only when nothing else was measured)."""
        if self.measured_steps >= MIN_STEPS_FOR_VERDICT:
            return dict(self.totals), self.measured_steps
        totals = {name: self.totals[name] + self.first_step_seconds[name] for name in PHASES}
        return totals, self.measured_steps + (1 if any(self.first_step_seconds.values()) else 0)

    @never_raise()
    def finish(self) -> None:
        """Diagnose the run once: phase verdicts and curve findings, then close the files."""
        if self.finished:
            return
        self.finished = True
        self.clock.finish()
        findings = []
        if self.settings.phases:
            totals, steps_measured = self.phase_totals()
            if steps_measured:
                events.emit(
                    "phase-summary",
                    steps=steps_measured,
                    seconds=totals,
                    **_location(self.clock.loop_at or self.clock.model_at),
                )
            findings.extend(
                phase_verdicts(
                    totals,
                    steps_measured,
                    self.clock.loader_settings(),
                    uses_gpu=self.clock.uses_cuda,
                    cpu_count=os.cpu_count(),
                    data_share_threshold=self.settings.data_share_threshold,
                )
            )
        if self.settings.diagnose_curves:
            findings.extend(diagnose_curves(self.curves()))
        for finding in findings:
            events.emit_finding(finding)
        if self.writer is not None:
            self.writer.close()
        self.log.close()


def _location(where: tuple[str, int] | None) -> dict[str, Any]:
    return {"file": where[0], "line": where[1]} if where is not None else {}


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

    def on_event(event: dict[str, Any]) -> None:
        if event.get("type") == "run-finished":
            measurement.finish()

    events.subscribe(on_event)
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
