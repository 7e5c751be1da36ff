"""``agent.measurement.profiling``, in process: cProfile stats into the table's rows, the code swapping that gives
line_profiler the script's own functions, and line timings; ``python -m tensorsight profile`` on real scripts is
tests/cli/test_profile.py."""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import textwrap
import types

import pytest
from line_profiler import LineProfiler

from tensorsight.agent.measurement import profiling
from tensorsight.agent.runtime.user_code import PACKAGE_ROOT


def test_rows_leave_out_our_frames_and_the_profiler_and_mark_built_ins_and_user_code(tmp_path):
    script = str(tmp_path / "train.py")
    ours = os.path.join(PACKAGE_ROOT, "agent", "measurement", "phases.py")
    stats = {
        (script, 3, "step"): (4, 5, 0.5, 2.0, {}),
        ("~", 0, "<built-in method time.sleep>"): (9, 9, 1.5, 1.5, {}),
        (json.__file__, 299, "loads"): (1, 1, 0.01, 0.02, {}),
        (ours, 10, "timed"): (1, 1, 9.0, 9.0, {}),
        ("~", 0, "<method 'disable' of '_lsprof.Profiler' objects>"): (1, 1, 9.0, 9.0, {}),
    }
    rows = profiling.rows_from_stats(stats)
    assert [r.function for r in rows] == ["step", "<built-in method time.sleep>", "loads"]
    step, sleep, loads = rows
    assert (step.file, step.line, step.calls, step.primitive_calls, step.user) == (script, 3, 5, 4, True)
    assert (sleep.file, sleep.user, sleep.own_s) == (None, False, 1.5)
    assert loads.user is False and loads.file == os.path.abspath(json.__file__)


def test_rows_keep_the_top_by_cumulative_and_the_top_by_own_time():
    stats = {
        ("~", 0, "wide"): (1, 1, 0.1, 5.0, {}),
        ("~", 0, "hot"): (1, 1, 3.0, 3.0, {}),
        ("~", 0, "neither"): (1, 1, 0.2, 0.3, {}),
    }
    assert [r.function for r in profiling.rows_from_stats(stats, top=1)] == ["wide", "hot"]


def _busy(n):
    return sum(i * i for i in range(n))


def test_rows_from_a_real_cprofile_run_count_the_calls():
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(7):
        _busy(100)
    profiler.disable()
    rows = profiling.rows_from_stats(pstats.Stats(profiler).stats)
    (busy,) = [r for r in rows if r.function == "_busy"]
    assert busy.calls == 7 and busy.file == os.path.abspath(__file__) and busy.user
    assert busy.line == _busy.__code__.co_firstlineno
    assert not any("_lsprof.Profiler" in r.function for r in rows)


SCRIPT = textwrap.dedent(
    """
    class Dataset:
        def __getitem__(self, index):
            def inner():
                return index
            return inner()

    def work(n):
        total = 0
        for i in range(n):
            total += i
        return total
    """
)


def test_find_code_objects_matches_qualified_and_plain_names():
    code = compile(SCRIPT, "script.py", "exec")
    found = profiling.find_code_objects(code, ["Dataset.__getitem__", "work", "inner", "absent"])
    assert set(found) == {"Dataset.__getitem__", "work", "inner"}
    assert [c.co_qualname for c in found["Dataset.__getitem__"]] == ["Dataset.__getitem__"]
    assert [c.co_qualname for c in found["inner"]] == ["Dataset.__getitem__.<locals>.inner"]


def test_substitute_code_swaps_a_nested_body_and_keeps_the_rest():
    code = compile(SCRIPT, "script.py", "exec")
    assert profiling.substitute_code(code, {}) is code
    (work,) = profiling.find_code_objects(code, ["work"])["work"]
    doubled = compile("def work(n):\n    return 2 * n\n", "other.py", "exec").co_consts[0]
    namespace: dict = {}
    exec(profiling.substitute_code(code, {work: doubled}), namespace)
    assert namespace["work"](5) == 10
    assert namespace["Dataset"]()[3] == 3
    untouched: dict = {}
    exec(code, untouched)
    assert untouched["work"](5) == 10 and untouched["work"](4) == 6  # the original still sums 0..n-1


def test_resolve_import_finds_module_qualnames_or_nothing():
    assert profiling._resolve_import("json:dumps") is json.dumps
    assert profiling._resolve_import("json.decoder:JSONDecoder.decode") is json.decoder.JSONDecoder.decode
    assert profiling._resolve_import("json:nope") is None
    assert profiling._resolve_import("no_such_module_here:f") is None


def test_instrumented_script_gives_line_timings_in_source_order(tmp_path):
    path = tmp_path / "script.py"
    path.write_text(SCRIPT)
    code = compile(SCRIPT, str(path), "exec")
    result = profiling.ProfileResult(script=str(path))
    line_profiler = LineProfiler()
    instrumented = profiling._instrument(code, ["work", "missing", "json:nope"], line_profiler, result)
    assert result.missing_functions == ["missing", "json:nope"]
    assert result.notes and result.notes[0].startswith("not found: missing, json:nope")
    namespace: dict = {}
    exec(instrumented, namespace)
    line_profiler.enable_by_count()
    try:
        assert namespace["work"](50) == sum(range(50))
    finally:
        line_profiler.disable_by_count()
    (work,) = [f for f in profiling.function_lines(line_profiler.get_stats()) if f.function == "work"]
    assert work.file == str(path) and work.first_line == SCRIPT.splitlines().index("def work(n):") + 1
    assert [line.line for line in work.lines] == sorted(line.line for line in work.lines)
    loop = next(line for line in work.lines if line.source.strip() == "total += i")
    assert loop.hits == 50
    assert sum(line.percent for line in work.lines) == pytest.approx(100.0)


def test_function_lines_skip_functions_that_never_ran():
    stats = types.SimpleNamespace(unit=1e-6, timings={("f.py", 1, "idle"): [], ("f.py", 5, "ran"): [(6, 2, 10.0)]})
    (ran,) = profiling.function_lines(stats)
    assert ran.function == "ran" and ran.total_s == pytest.approx(1e-5)
    assert ran.lines[0].per_hit_s == pytest.approx(5e-6) and ran.lines[0].percent == pytest.approx(100.0)


def test_after_the_warm_up_steps_alternate_under_and_without_the_profiler_and_each_kind_is_timed():
    schedule = profiling.StepSchedule(warmup=1, steps=3)
    assert schedule.last == 7
    assert [step for step in range(0, 9) if schedule.counted(step)] == [2, 3, 4, 5, 6, 7]
    assert [step for step in range(0, 9) if schedule.profiled(step)] == [2, 4, 6]
    # step 5 crosses an epoch's end (a validation pass): the slowdown is the ratio of medians, not of means
    for step, seconds in ((2, 0.03), (3, 0.01), (4, 0.03), (5, 0.5), (6, 0.03), (7, 0.01)):
        schedule.add_wall(step, seconds)
    assert schedule.walls == {True: [0.03, 0.03, 0.03], False: [0.01, 0.5, 0.01]}
    assert schedule.slowdown() == pytest.approx(3.0)
    assert profiling.StepSchedule(warmup=0, steps=1).profiled(1), "without warm-up the first step is profiled"
    assert profiling.StepSchedule(warmup=1, steps=2).slowdown() is None, "nothing to compare before both ran"


def test_phase_totals_sum_each_phase_over_the_steps_of_one_kind():
    totals = profiling.PhaseTotals()
    for _ in range(2):
        totals.add(dict.fromkeys(profiling.PHASES, 1.0))
    assert totals.steps == 2 and totals.seconds == dict.fromkeys(profiling.PHASES, 2.0)
