"""The request time budget: the clock itself, and what summaries do when the budget is short or spent.

In-process, with the clock's budget and measured speed set by the test (the real-session counterpart, with heavy
frames under debugpy, is test_request_budget.py). Each case checks that a line is right or says it is partial, and
that what was left out comes back in a later request.
"""

import math

import pytest
import torch

from tensorsight.agent.display import children, module_scan, presentation, reading
from tensorsight.agent.display.budget import CLOCK, RequestClock
from tensorsight.core.stats.cache import StatsCache
from tensorsight.core.stats.figures import StatsBudget


class FakeTime:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_calls_close_together_share_one_budget_and_a_pause_starts_another():
    now = FakeTime()
    clock = RequestClock(budget_s=1.0, gap_s=0.25, clock=now, value_budget_s=10.0)
    assert clock.remaining() == math.inf  # outside any request: no limit
    with clock.call():
        now.now += 0.6
        assert clock.remaining() == pytest.approx(0.4)
        with clock.call():  # nested: the same call
            now.now += 0.1
    now.now += 0.1  # the next value of the same Variables request
    with clock.call():
        assert clock.remaining() == pytest.approx(0.2)
        now.now += 0.5
        assert clock.remaining() < 0 and clock.affordable_elements() == 0
    now.now += 0.3  # a pause: a new request
    with clock.call():
        assert clock.remaining() == pytest.approx(1.0)


def test_one_value_cannot_take_the_whole_request_budget():
    now = FakeTime()
    clock = RequestClock(budget_s=1.0, gap_s=0.25, clock=now, value_budget_s=0.4)
    with clock.call():
        now.now += 0.3
        assert clock.remaining() == pytest.approx(0.1)  # the value's own 0.4 s
    with clock.call():  # the next value of the same request: 0.4 s again, within the 0.7 s the request has left
        assert clock.remaining() == pytest.approx(0.4)
        now.now += 0.4
    with clock.call():
        now.now += 0.1
        assert clock.remaining() == pytest.approx(0.2)  # now the request's budget is the shorter one


def test_the_clock_learns_speed_only_from_reductions_long_enough_to_time():
    clock = RequestClock()
    before = clock.elements_per_second
    clock.learn(100, 0.05)  # a first call's fixed costs, not the machine's speed
    assert clock.elements_per_second == before
    clock.learn(10_000_000, 0.1)  # 1e8 elements per second
    assert clock.elements_per_second == pytest.approx(1e8)
    clock.learn(10_000_000, 0.01)  # faster: trusted only half-way
    assert clock.elements_per_second == pytest.approx(5.5e8)


def test_a_spent_budget_defers_big_figures_to_the_next_request(monkeypatch):
    big = torch.arange(1_000_000, dtype=torch.float32)
    small = torch.tensor([1.0, 2.0])
    reading.CACHE.clear()
    monkeypatch.setattr(CLOCK, "budget_s", 0.0)
    assert presentation.present(big) == "f32[1000000] cpu (figures on expand: this view's time budget is spent)"
    assert presentation.present(small) == "f32[2] cpu [1, 2] μ=1.5 σ=0.707"  # small ones cost nothing to show
    monkeypatch.setattr(CLOCK, "budget_s", 1.0)
    CLOCK.new_request()
    assert presentation.present(big) == "f32[1000000] cpu μ=5e5 σ=2.89e5 [0, 1e6]"


def test_a_short_budget_gives_a_marked_estimate_and_the_cache_keeps_the_exact_figures(monkeypatch):
    big = torch.arange(1_000_000, dtype=torch.float32)
    reading.CACHE.clear()
    monkeypatch.setattr(CLOCK, "elements_per_second", 1e5)  # 1e6 elements would take 10 s
    line = presentation.present(big)
    assert line.startswith("f32[1000000] cpu μ≈") and "(sampled" in line, line
    presentation.summarize(big)  # outside a request: exact, and cached
    assert presentation.present(big) == "f32[1000000] cpu μ=5e5 σ=2.89e5 [0, 1e6]"  # served from the cache


def test_a_module_scan_stops_at_the_budget_and_says_how_far_it_got(monkeypatch):
    model = torch.nn.ParameterList(torch.nn.Parameter(torch.ones(3)) for _ in range(2000))
    for p in model:
        p.grad = torch.ones(3)
    with torch.no_grad():
        model[1999][0] = float("nan")
    full = presentation.summarize(model)  # outside a request: no budget, the whole scan
    assert full == "ParameterList cpu f32 ⚠ NaN/Inf in weights: 1999 train 6000 params (all trainable) grad norm=77.5"
    with torch.no_grad():
        model[0][0] = 1.0  # an in-place write: the last scan no longer holds
    monkeypatch.setattr(CLOCK, "budget_s", 0.0)
    line = presentation.present(model)
    assert line.startswith("ParameterList cpu f32"), line
    assert "(scanned 512 of 2000 tensors for NaN/Inf, rest on expand)" in line
    assert "grad norm" not in line  # a norm of a quarter of the grads would read as the whole
    ok = torch.nn.ParameterList(torch.nn.Parameter(torch.ones(3)) for _ in range(4))
    for p in ok:
        p.grad = torch.ones(3)
    monkeypatch.setattr(CLOCK, "budget_s", 1.0)
    CLOCK.new_request()
    assert presentation.present(ok) == "ParameterList cpu f32 train 12 params (all trainable) grad norm=3.46"


def test_an_expanded_module_lists_at_most_500_members():
    model = torch.nn.ParameterList(torch.nn.Parameter(torch.ones(2)) for _ in range(600))
    names = [name for name, _, _ in children.child_entries(model)]
    # the members, whatever rows come before them (a "(scan)" row appears when a loaded machine runs out of budget)
    members = [name for name in names if name.isdigit()]
    assert members[:3] == ["0", "1", "2"] and members[-1] == "499" and len(members) == 500
    more = dict((name, child) for name, child, _ in children.child_entries(model))["(more)"]
    assert more.startswith("… 100 more submodules/parameters/buffers")


def test_cache_serves_exact_figures_under_any_budget_and_estimates_only_under_their_own():
    cache = StatsCache(capacity=2)
    x = torch.arange(10_000.0)
    sampled = StatsBudget(exact_elements=100, sample_elements=100)
    estimate = cache.stats(x, sampled)
    assert not estimate.exact and cache.stats(x, sampled) is estimate
    assert cache.cached(x) is None  # an estimate does not answer a request for exact figures
    exact = cache.stats(x)
    assert exact.exact and cache.cached(x, sampled) is exact


def test_cache_drops_the_least_recently_used_and_grows_to_what_is_in_view():
    cache = StatsCache(capacity=2)
    a, b, c = torch.ones(3), torch.zeros(3), torch.full((3,), 2.0)
    cache.stats(a)
    cache.stats(b)
    cache.stats(a)  # a is now the most recently used
    cache.stats(c)
    assert cache.cached(a) is not None and cache.cached(b) is None
    cache.reserve(10_000)
    assert cache.capacity == 10_000
    cache.reserve(5)
    assert cache.capacity == 10_000


def test_a_stopped_module_scan_goes_on_at_the_next_view_and_a_finished_one_is_reused(monkeypatch):
    model = torch.nn.ParameterList(torch.nn.Parameter(torch.ones(3)) for _ in range(1500))
    with torch.no_grad():
        model[1400][1] = float("inf")
    monkeypatch.setattr(CLOCK, "budget_s", 0.0)
    lines = [presentation.present(model) for _ in range(3)]  # each view scans one more batch of 512
    assert "(scanned 512 of 1500 tensors for NaN/Inf, rest on expand)" in lines[0]
    assert "(scanned 1024 of 1500 tensors for NaN/Inf, rest on expand)" in lines[1]
    assert lines[2] == "ParameterList cpu f32 ⚠ NaN/Inf in weights: 1400 train 4500 params (all trainable)"
    calls = []
    monkeypatch.setattr(module_scan, "_norms", lambda *args: calls.append(args) or [])
    assert presentation.present(model) == lines[2] and not calls  # unchanged parameters: the scan is reused
    monkeypatch.undo()
    with torch.no_grad():
        model[1400][1] = 0.0  # an in-place write bumps _version: scanned again
    assert presentation.summarize(model) == "ParameterList cpu f32 train 4500 params (all trainable)"


def test_a_line_over_its_glance_budget_gives_the_alarm_and_mean_and_the_expand_gives_the_rest(monkeypatch):
    big = torch.arange(2_000_000, dtype=torch.float32)
    big[123] = float("nan")
    reading.CACHE.clear()
    # 2e7 elements/s: a whole summary of 2e6 elements (0.1 s) is over a line's 20 ms, one pass (33 ms) fits 0.4 s
    monkeypatch.setattr(CLOCK, "elements_per_second", 2e7)
    line = presentation.present(big)
    assert line == "f32[2000000] cpu ⚠ NaN×1 μ=1e6 (σ, range on expand)"
    assert "⚠ NaN×1" in line[:40]
    CLOCK.new_request()  # the expand is another request: the "stats" row asks for the rest, within its budget
    monkeypatch.setattr(CLOCK, "elements_per_second", 2e7)
    rows = dict((name, child) for name, child, _ in children.child_entries(big))
    assert str(rows["stats"]) == "min=0 max=2e6 mean=1e6 std=5.77e5"
    figures = {name: child for name, child, _ in rows["stats"].entries()}
    assert figures["nan"] == 1 and figures["std"] == pytest.approx(
        torch.arange(2_000_000.0)[torch.arange(2_000_000) != 123].std().item(), rel=1e-6
    )
    CLOCK.new_request()
    assert presentation.present(big) == "f32[2000000] cpu ⚠ NaN×1 μ=1e6 σ=5.77e5 [0, 2e6]"  # now cached whole


def test_the_first_40_characters_carry_dtype_shape_device_and_alarm():
    odd = torch.full((3, 4, 5, 6, 7, 8, 9, 10), 1.0)
    odd[0, 0, 0, 0, 0, 0, 0, 0] = float("inf")
    line = presentation.summarize(odd)
    assert line.startswith("f32[") and "cpu ⚠ +Inf×1" in line[:40], line
    quantized = torch.quantize_per_tensor(torch.tensor([1.0, 2.0]), 0.1, 0, torch.quint8)
    small_bad = torch.tensor([1.0, float("nan"), 3.0])
    assert presentation.summarize(small_bad).startswith("f32[3] cpu ⚠ NaN×1 [1, nan, 3]")
    assert presentation.summarize(quantized).startswith("qu8[2] cpu scale=0.1 zero_point=0")
