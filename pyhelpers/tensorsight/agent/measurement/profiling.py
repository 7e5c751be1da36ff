"""Profiles N training steps of a script: cProfile per function, line_profiler per line of chosen functions, and the
phase breakdown of the steps in between, measured without them.

Called by the ``python -m tensorsight profile`` command (``tensorsight.cli.profile``), which the editor's "Profile
Training" command runs with ``--json`` to fill a sortable table with jump-to-source. The script runs in this process
(``script_runner``); profiling starts after ``warmup`` optimizer steps (so imports and first-step initialisation do
not drown the steady state). From there the steps alternate (``StepSchedule``): one under the profilers, one without,
until ``steps`` of each have run, and the script is stopped. The profilers cost the program time in every Python
call, so a Python-heavy step can run ten times slower under them, and the phases they slow most are not the ones
the program spends its time in: the phase breakdown (the same ``PhaseClock`` a debug session's code lens and panel
read) is taken from the steps without the profilers, and the report says how much slower the profiled steps ran
(``slowdown``: both kinds timed alike, in the same run). Functions for line-level timing are found by name in the
script's own code objects (their instrumented bodies are swapped in before the script runs) or as
``module:qualname`` for imported code; line_profiler is optional.
"""

from __future__ import annotations

import cProfile
import importlib
import linecache
import os
import pstats
import statistics
import time
import traceback
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tensorsight.agent.runtime import script_runner
from tensorsight.agent.runtime.user_code import PACKAGE_ROOT, is_user_file
from tensorsight.core.phases import PHASES


@dataclass(frozen=True)
class ProfileRow:
    """One function in the cProfile table; ``file`` is None for built-ins (no source to jump to)."""

    function: str
    file: str | None
    line: int
    calls: int
    primitive_calls: int
    own_s: float
    cumulative_s: float
    user: bool


@dataclass(frozen=True)
class LineTiming:
    line: int
    hits: int
    time_s: float
    per_hit_s: float
    percent: float
    source: str


@dataclass
class FunctionLines:
    """line_profiler's timings for one function."""

    function: str
    file: str
    first_line: int
    total_s: float
    lines: list[LineTiming] = field(default_factory=list)


@dataclass
class ProfileResult:
    script: str
    steps_profiled: int = 0  # steps run under the profilers (the rows and line timings cover these)
    warmup: int = 0
    wall_s: float = 0.0  # their wall seconds
    steps_timed: int = 0  # steps run without the profilers, interleaved with those
    timed_wall_s: float = 0.0
    slowdown: float | None = None  # median step under the profilers / median step without (``StepSchedule``)
    rows: list[ProfileRow] = field(default_factory=list)
    phases: dict[str, Any] | None = None
    functions: list[FunctionLines] = field(default_factory=list)
    missing_functions: list[str] = field(default_factory=list)
    error: str = ""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ------------------------------------------------------------------------------------------------- cProfile rows
def rows_from_stats(stats: Mapping[Any, Any], top: int = 40) -> list[ProfileRow]:
    """The ``top`` functions by cumulative time plus the ``top`` by own time, sorted by cumulative time.

    ``stats`` is ``pstats.Stats(...).stats``:
    ``(file, line, name) -> (primitive calls, calls, own, cumulative, callers)``.
    The profiler's own frames and TensorSight's are left out.
    """
    rows: list[ProfileRow] = []
    for (filename, line, name), (primitive, calls, own, cumulative, _callers) in stats.items():
        if filename.startswith(PACKAGE_ROOT + os.sep) or "_lsprof.Profiler" in name:
            continue
        builtin = filename == "~" or filename.startswith("<")
        rows.append(
            ProfileRow(
                function=name,
                file=None if builtin else os.path.abspath(filename),
                line=int(line),
                calls=int(calls),
                primitive_calls=int(primitive),
                own_s=float(own),
                cumulative_s=float(cumulative),
                user=not builtin and is_user_file(filename),
            )
        )
    by_cumulative = sorted(rows, key=lambda r: -r.cumulative_s)[:top]
    by_own = sorted(rows, key=lambda r: -r.own_s)[:top]
    chosen = {id(r): r for r in (*by_cumulative, *by_own)}
    return sorted(chosen.values(), key=lambda r: (-r.cumulative_s, -r.own_s))


# ------------------------------------------------------------------------------------ line_profiler code swapping
def find_code_objects(code: types.CodeType, names: Iterable[str]) -> dict[str, list[types.CodeType]]:
    """Code objects inside ``code`` whose qualified name (or plain name) is one of ``names``."""
    wanted = set(names)
    found: dict[str, list[types.CodeType]] = {}
    stack = [code]
    while stack:
        current = stack.pop()
        for const in current.co_consts:
            if isinstance(const, types.CodeType):
                qualname = getattr(const, "co_qualname", const.co_name)
                for name in (qualname, const.co_name):
                    if name in wanted:
                        found.setdefault(name, []).append(const)
                        break
                stack.append(const)
    return found


def substitute_code(code: types.CodeType, replacements: Mapping[types.CodeType, types.CodeType]) -> types.CodeType:
    """``code`` with nested code objects replaced (recursively), so the script defines the instrumented functions."""
    consts = []
    changed = False
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            new = replacements.get(const)
            if new is None:
                new = substitute_code(const, replacements)
            changed = changed or new is not const
            consts.append(new)
        else:
            consts.append(const)
    return code.replace(co_consts=tuple(consts)) if changed else code


def _resolve_import(spec: str) -> Any:
    """``package.module:Class.method`` -> the function object (None when it cannot be found)."""
    module_name, _, attr_path = spec.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr_path.split("."):
            target = getattr(target, part)
    except Exception:  # noqa: BLE001 - a wrong name is reported as missing
        return None
    return getattr(target, "__func__", target)


def _line_profiler() -> Any:
    try:
        from line_profiler import LineProfiler
    except ImportError:
        return None
    return LineProfiler()


def function_lines(stats: Any) -> list[FunctionLines]:
    """line_profiler stats -> per-function line timings (lines that ran, in source order)."""
    out: list[FunctionLines] = []
    unit = float(stats.unit)
    for (filename, first_line, name), entries in stats.timings.items():
        if not entries:
            continue
        total = sum(t for _, _, t in entries) * unit
        lines = [
            LineTiming(
                line=int(lineno),
                hits=int(hits),
                time_s=t * unit,
                per_hit_s=t * unit / hits if hits else 0.0,
                percent=100.0 * t * unit / total if total else 0.0,
                source=linecache.getline(filename, lineno).rstrip(),
            )
            for lineno, hits, t in sorted(entries)
        ]
        out.append(FunctionLines(name, os.path.abspath(filename), int(first_line), total, lines))
    return out


# ---------------------------------------------------------------------------------------------------- the session
def profile_script(
    path: str,
    args: Sequence[str] = (),
    steps: int = 20,
    warmup: int = 1,
    functions: Sequence[str] = (),
    top: int = 40,
    phases: bool = True,
) -> ProfileResult:
    """Run ``path``: after ``warmup`` optimizer steps, ``steps`` steps under the profilers alternating with ``steps``
    steps without them (see the module docstring); the script is stopped after the last."""
    steps, warmup = max(1, int(steps)), max(0, int(warmup))
    result = ProfileResult(script=os.path.abspath(path), warmup=warmup)
    try:
        code = script_runner.compile_script(path)
    except (OSError, SyntaxError, ValueError) as exc:  # the report says why, as for a script that raised
        result.error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return result
    line_profiler = _line_profiler() if functions else None
    if functions and line_profiler is None:
        result.notes.append("line_profiler is not installed (pip install line_profiler): no line timings")
    if line_profiler is not None:
        code = _instrument(code, functions, line_profiler, result)
    profiler = cProfile.Profile()
    schedule = StepSchedule(warmup, steps)
    tallies = {True: PhaseTotals(), False: PhaseTotals()}  # by "under the profiler"
    state: dict[str, Any] = {"on": False, "since": time.perf_counter()}

    def switch(step: int) -> None:
        """At the end of optimizer step ``step`` (0: before the first): the profilers on for the next step or off."""
        now = time.perf_counter()
        if schedule.counted(step):
            schedule.add_wall(step, now - state["since"])
        profile_next = schedule.profiled(step + 1)
        if profile_next and not state["on"]:
            if line_profiler is not None:
                line_profiler.enable_by_count()
            profiler.enable()
        elif not profile_next and state["on"]:
            profiler.disable()
            if line_profiler is not None:
                line_profiler.disable_by_count()
        state["on"] = profile_next
        state["since"] = time.perf_counter()  # switching is neither kind of step's time

    def on_step(step: int, optimizer: Any) -> None:
        switch(step)
        if step >= schedule.last:
            raise script_runner.StopScript

    def on_torch(torch: Any) -> None:
        from tensorsight.agent.runtime import steps as step_counter

        if phases:
            from tensorsight.agent.measurement.phases import PhaseClock

            clock = PhaseClock(torch)
            clock.install()
            clock.step_listeners.append(
                lambda record: (
                    tallies[schedule.profiled(record.step)].add(record.seconds)
                    if schedule.counted(record.step)
                    else None
                )
            )
            state["clock"] = clock
        step_counter.add_step_listener(on_step)

    script_runner.after_torch(on_torch)
    switch(0)
    outcome = script_runner.run_script(path, list(args), code)
    if state["on"]:
        profiler.disable()
        if line_profiler is not None:
            line_profiler.disable_by_count()
    result.error = outcome.error
    result.steps_profiled = len(schedule.walls[True])
    result.steps_timed = len(schedule.walls[False])
    result.wall_s = sum(schedule.walls[True])
    result.timed_wall_s = sum(schedule.walls[False])
    result.slowdown = schedule.slowdown()
    if outcome.steps < warmup:
        result.notes.append(
            f"the script made {outcome.steps} optimizer step(s), fewer than the {warmup} warm-up step(s): nothing "
            "was profiled; use --warmup 0 to profile the whole script"
        )
    result.rows = rows_from_stats(pstats.Stats(profiler).stats, top) if result.steps_profiled else []  # type: ignore[attr-defined]
    if line_profiler is not None:
        result.functions = function_lines(line_profiler.get_stats())
    clock = state.get("clock")
    unprofiled, profiled = tallies[False], tallies[True]
    measured = unprofiled if unprofiled.steps else profiled  # a script that stopped after one profiled step
    if clock is not None and measured.steps:
        result.phases = {
            "steps": measured.steps,
            "seconds": measured.seconds,
            "profiler_off": measured is unprofiled,
            "profiled_steps": profiled.steps,
            "profiled_seconds": profiled.seconds,
        }
        where = clock.loop_at or clock.model_at
        if where is not None:
            result.phases.update({"file": where[0], "line": where[1]})
    return result


class StepSchedule:
    """Which optimizer steps run under the profilers: after ``warmup`` steps, one in two (the first of each pair), until
    ``steps`` of each kind have run; the two kinds interleave so a slow stretch of the run (the machine's other work)
    falls on both. Keeps each kind's wall seconds per step."""

    def __init__(self, warmup: int, steps: int) -> None:
        self.warmup = warmup
        self.last = warmup + 2 * steps  # the step after which the script is stopped
        self.walls: dict[bool, list[float]] = {True: [], False: []}

    def counted(self, step: int) -> bool:
        return self.warmup < step <= self.last

    def profiled(self, step: int) -> bool:
        return self.counted(step) and (step - self.warmup) % 2 == 1

    def add_wall(self, step: int, seconds: float) -> None:
        self.walls[self.profiled(step)].append(seconds)

    def slowdown(self) -> float | None:
        """The median step under the profilers over the median without them, both timed alike (None until both ran).
        Medians: the one step that crosses an epoch's end (a validation pass, workers starting) falls on one kind
        only and would tip a ratio of means either way."""
        profiled, plain = self.walls[True], self.walls[False]
        if not (profiled and plain) or statistics.median(plain) <= 0.0:
            return None
        return statistics.median(profiled) / statistics.median(plain)


class PhaseTotals:
    """Seconds per phase summed over the steps of one kind (with or without the profilers)."""

    def __init__(self) -> None:
        self.steps = 0
        self.seconds = dict.fromkeys(PHASES, 0.0)

    def add(self, seconds: Mapping[str, float]) -> None:
        self.steps += 1
        for name in PHASES:
            self.seconds[name] += seconds.get(name, 0.0)


def _instrument(code: types.CodeType, functions: Sequence[str], line_profiler: Any, result: ProfileResult) -> Any:
    """Register each named function with line_profiler; returns the script code with instrumented bodies."""
    script_names = [name for name in functions if ":" not in name]
    found = find_code_objects(code, script_names)
    replacements: dict[types.CodeType, types.CodeType] = {}
    for name in functions:
        if ":" in name:
            target = _resolve_import(name)
            if target is None or not hasattr(target, "__code__"):
                result.missing_functions.append(name)
                continue
            line_profiler.add_function(target)
            continue
        if name not in found:
            result.missing_functions.append(name)
            continue
        for original in found[name]:
            stand_in = types.FunctionType(original, {})
            line_profiler.add_function(stand_in)  # pads the bytecode so line_profiler recognises this body
            replacements[original] = stand_in.__code__
    if result.missing_functions:
        result.notes.append(
            "not found: " + ", ".join(result.missing_functions) + " (give a function or Class.method defined in "
            "the script, or module:qualname for imported code)"
        )
    return substitute_code(code, replacements) if replacements else code
