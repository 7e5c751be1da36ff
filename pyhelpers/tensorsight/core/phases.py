"""Phase breakdown of a training step and the verdicts it supports (pure; no I/O, no torch).

The agent's phase clock (``tensorsight.agent.measurement.phases``) measures, per optimizer step, the seconds spent in
five
phases: ``data`` (the DataLoader iterator), ``forward`` (top-level module calls), ``backward``, ``optimizer``
(``optimizer.step()``) and ``other`` (everything else in the loop). This module turns those totals into a table
for people and into ``performance`` findings: the seed lesson's "data loading often eats 60% of training time; the
fix is num_workers > 0, not a faster GPU".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tensorsight.core.findings import Finding
from tensorsight.core.l10n import t
from tensorsight.core.protocol import DATA_DOMINANT_SHARE, MIN_STEPS_FOR_VERDICT

PHASES = ("data", "forward", "backward", "optimizer", "other")

# A data phase shorter than this per step is the hand-off of a batch (worker IPC, collation bookkeeping), which no
# DataLoader setting removes: on tiny models it can be half of a 4 ms step without being a bottleneck worth a warning.
MIN_DATA_MS_PER_STEP = 5.0


@dataclass
class PhaseTally:
    """Seconds per phase of a run's steps, the first step kept apart: it pays for worker start-up and lazy
    initialisation. The agent's run summary, the server's code lens and the training panel (``runStore.ts``, the same
    rule in TypeScript) all read a run through ``breakdown``, so they show one breakdown for one run."""

    first: dict[str, float] | None = None
    later: dict[str, float] | None = None
    later_steps: int = 0

    def add(self, step: int | None, seconds: Mapping[str, float]) -> None:
        """One step's seconds per phase; ``step`` 1 (or the first step of a run that numbers none) is kept apart."""
        if self.first is None and (step == 1 or (step is None and not self.later_steps)):
            self.first = dict(seconds)
            return
        later = self.later if self.later is not None else {}
        for name, value in seconds.items():
            later[name] = later.get(name, 0.0) + value
        self.later = later
        self.later_steps += 1

    def breakdown(self) -> tuple[dict[str, float], int]:
        """Seconds per phase and the steps they cover: the later steps once there are MIN_STEPS_FOR_VERDICT of
        them, else every step measured, the first included."""
        later = dict(self.later or {})
        if self.later_steps >= MIN_STEPS_FOR_VERDICT or self.first is None:
            return later, self.later_steps
        for name, value in self.first.items():
            later[name] = later.get(name, 0.0) + value
        return later, self.later_steps + 1


@dataclass(frozen=True)
class LoaderSettings:
    """Where a DataLoader was built and the settings that decide how fast it delivers batches."""

    file: str
    line: int
    num_workers: int = 0
    pin_memory: bool = False
    persistent_workers: bool = False
    batch_size: int | None = None
    dataset_getitem: tuple[str, int] | None = None  # (file, first line) of its dataset's __getitem__, user code only


def phase_shares(seconds: Mapping[str, float]) -> dict[str, float]:
    """Share of the step for each phase (0..1); all zeros when nothing was measured."""
    total = sum(max(0.0, float(seconds.get(name, 0.0))) for name in PHASES)
    if total <= 0.0:
        return dict.fromkeys(PHASES, 0.0)
    return {name: max(0.0, float(seconds.get(name, 0.0))) / total for name in PHASES}


def dominant_phase(seconds: Mapping[str, float]) -> tuple[str, float]:
    """The phase with the largest share and that share."""
    shares = phase_shares(seconds)
    name = max(PHASES, key=lambda phase: shares[phase])
    return name, shares[name]


def format_phase_table(totals: Mapping[str, float], steps: int) -> str:
    """A small fixed-width table: phase, mean milliseconds per step, share, and a bar."""
    steps = max(1, int(steps))
    shares = phase_shares(totals)
    total_ms = sum(max(0.0, float(totals.get(name, 0.0))) for name in PHASES) * 1000.0 / steps
    lines = [f"{'phase':<10} {'ms/step':>9} {'share':>6}"]
    for name in PHASES:
        per_step = max(0.0, float(totals.get(name, 0.0))) * 1000.0 / steps
        bar = "█" * round(shares[name] * 20)
        lines.append(f"{name:<10} {per_step:>9.2f} {shares[name] * 100:>5.0f}% {bar}")
    lines.append(f"{'step':<10} {total_ms:>9.2f} {'100%':>6}  ({steps} steps)")
    return "\n".join(lines)


def data_loading_advice(loader: LoaderSettings, uses_gpu: bool, cpu_count: int | None) -> list[str]:
    """Concrete DataLoader changes, most effective first, given its current settings."""
    advice: list[str] = []
    suggested_workers = max(2, min(8, (cpu_count or 4) - 1))
    if loader.num_workers <= 0:
        advice.append(t("load batches in parallel: DataLoader(..., num_workers={0})", suggested_workers))
    else:
        advice.append(
            t(
                "num_workers={0} is not keeping up: raise it (this machine has {1} CPUs) or raise prefetch_factor",
                loader.num_workers,
                cpu_count or "?",
            )
        )
    if not loader.persistent_workers:
        advice.append(t("persistent_workers=True, so worker processes survive between epochs"))
    if uses_gpu and not loader.pin_memory:
        advice.append(t("pin_memory=True (with .to(device, non_blocking=True)) for faster host-to-GPU copies"))
    advice.append(t("make Dataset.__getitem__ cheaper: decode/pre-process once and cache, avoid per-item Python loops"))
    return advice


def running_totals(totals: Mapping[str, float], waited: Mapping[str, float] | None) -> dict[str, float]:
    """Phase seconds less the time the training thread waited for a CPU: the data phase loses its own wait, the rest
    of the wait comes off the other phases in proportion to their time. Unchanged without readings."""
    running = {name: max(0.0, float(totals.get(name, 0.0))) for name in PHASES}
    if not waited:
        return running
    data_wait = min(running["data"], max(0.0, float(waited.get("data", 0.0))))
    others = sum(running[name] for name in PHASES if name != "data")
    other_wait = min(others, max(0.0, float(waited.get("step", 0.0)) - data_wait))
    running["data"] -= data_wait
    if others > 0.0:
        for name in PHASES:
            if name != "data":
                running[name] -= other_wait * running[name] / others
    return running


def phase_verdicts(
    totals: Mapping[str, float],
    steps: int,
    loader: LoaderSettings | None,
    uses_gpu: bool = False,
    cpu_count: int | None = None,
    data_share_threshold: float = DATA_DOMINANT_SHARE,
    waited: Mapping[str, float] | None = None,
) -> list[Finding]:
    """``performance`` findings from a run's phase totals (seconds summed over ``steps`` steps).

    Data loading above ``data_share_threshold`` of the step (and at least ``MIN_DATA_MS_PER_STEP``) is reported at the
    line that built the DataLoader;
    without a known DataLoader line there is nothing actionable to point at, so nothing is reported.

    ``waited`` holds the seconds of those steps the training thread spent waiting for a CPU ("data": within the data
    phase, "step": over the steps): the verdict judges the program's own time (``running_totals``), so a machine
    loaded by other work, which stretches a Python-heavy loader more than the model, does not make a healthy loader
    look like the bottleneck.
    """
    if steps < MIN_STEPS_FOR_VERDICT or loader is None:
        return []
    totals = running_totals(totals, waited)
    shares = phase_shares(totals)
    if shares["data"] <= data_share_threshold:
        return []
    per_step_ms = {name: max(0.0, float(totals.get(name, 0.0))) * 1000.0 / steps for name in PHASES}
    if per_step_ms["data"] < MIN_DATA_MS_PER_STEP:
        return []
    step_ms = sum(per_step_ms.values())
    advice = data_loading_advice(loader, uses_gpu, cpu_count)
    message = t(
        "data loading takes {share}% of each training step ({data_ms} ms of {step_ms} ms, mean over {steps} steps):"
        " the model waits for batches. Fix: {fixes}. A faster GPU would not help.",
        share=f"{shares['data'] * 100:.0f}",
        data_ms=f"{per_step_ms['data']:.1f}",
        step_ms=f"{step_ms:.1f}",
        steps=steps,
        fixes="; ".join(advice),
    )
    details = {
        "shares": {name: round(shares[name], 4) for name in PHASES},
        "ms_per_step": {name: round(per_step_ms[name], 3) for name in PHASES},
        "steps": steps,
        # time the training thread waited for a CPU, per step, left out of the figures above (0 where unknown)
        "cpu_wait_ms_per_step": round(max(0.0, float((waited or {}).get("step", 0.0))) * 1000.0 / steps, 3),
        "num_workers": loader.num_workers,
        "pin_memory": loader.pin_memory,
        "persistent_workers": loader.persistent_workers,
        "advice": advice,
    }
    return [Finding("performance", "warning", message, loader.file, loader.line, details=details)]
