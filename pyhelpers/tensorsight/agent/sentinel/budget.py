"""What observing ops outside modules op by op costs, step by step, and which steps the outside-modules mode
(``outside``) observes. Fed by that mode and by the backward node hooks it places (``backward``); read at each
outermost module call (``boundaries``)."""

from __future__ import annotations

import collections
import math
import time

from tensorsight.agent.sentinel.state import st
from tensorsight.core.l10n import t


class Budget:
    """What observing ops outside modules costs, step by step, and which steps are observed.

    A step here is the period from one outermost module call to the next. The cost of an observed step is timed two
    ways: what our mode and hooks spend besides the op itself plus the dispatch of each op into Python
    (``DISPATCH_SECONDS``, measured on a small CPU), and observed steps against unobserved ones (medians of the last
    ``WINDOW``: one slow step, a garbage collection, does not decide). While the larger exceeds ``SHARE`` of a step,
    only one step in ``stride`` is observed, so that the average stays within the share.

    The budget holds in time, not only per step: a stretch of ops with no boundary at all (metrics after the last
    step, an evaluation summary, post-processing, a program that never calls a module again) is one long period, and
    once it has run ``FIRST_STRETCH_OPS`` ops, the mode asks ``stretch_over`` every ``STRETCH_CHECK_EVERY`` ops
    whether what it spent in this period exceeds its share of the time the period has taken; then it stops checking
    and passes ops straight on until the next boundary (``outside``). That holds for the doctor too.

    The first ``FIRST_STEPS`` steps are always observed: that is where a bad learning rate, initialisation or data
    usually shows, and in a run of thousands of steps their cost does not count; small programs (the examples) are
    then observed throughout. The budget holds in debug sessions, where the program runs for its own sake. The
    doctor, a diagnostic run, observes every step (``active`` False): there, finding the line matters more.

    The whole sentinel answers to its 1.15x target, not the outside-modules mode alone: the boundary hooks time
    themselves (``boundary_spent``), and what they cost is taken from ``TOTAL_SHARE`` before the mode gets its part,
    at most ``SHARE`` and at least ``MIN_SHARE``. On a real model's step the boundary checks are a few sums against
    milliseconds of forward and backward, so the mode keeps ``SHARE``; on a step of a tiny model and a hundred small
    ops outside it (``benchmarks/bench_sentinel.py`` part 3), the boundaries take a real part of the step and the
    mode observes fewer steps. ``TOTAL_SHARE`` is below 0.15: the dispatch into our hooks and mode, which no clock of
    ours sees, needs the rest."""

    SHARE = 0.07
    TOTAL_SHARE = 0.10
    MIN_SHARE = 0.01
    DISPATCH_SECONDS = 1.2e-6
    WINDOW = 5
    FIRST_STEPS = 50
    PROBE_EVERY = 25
    MAX_STRIDE = 1000
    FIRST_STRETCH_OPS = 128
    STRETCH_CHECK_EVERY = 32

    def __init__(self) -> None:
        self.active = True
        self.ops = 0
        self.check_seconds = 0.0
        self.started = time.perf_counter()
        self.steps = 0
        self.stride = 1
        self.estimates: collections.deque[float] = collections.deque(maxlen=self.WINDOW)  # our cost / step
        self.observed: collections.deque[float] = collections.deque(maxlen=self.WINDOW)  # observed step times
        self.plain: collections.deque[float] = collections.deque(maxlen=self.WINDOW)  # unobserved step times
        self.boundary_seconds = 0.0  # what the boundary hooks spent in the current period
        self.boundary_shares: collections.deque[float] = collections.deque(maxlen=self.WINDOW)

    def spent(self, seconds: float) -> None:
        """One op (or one of our backward hooks) took ``seconds`` of ours, besides its dispatch."""
        self.ops += 1
        self.check_seconds += seconds

    def stretch_over(self) -> bool:
        """True when the period under way has spent more than its share of its own time on observing (checked every
        ``STRETCH_CHECK_EVERY`` ops, past the first ``FIRST_STRETCH_OPS``)."""
        if self.ops < self.FIRST_STRETCH_OPS or self.ops % self.STRETCH_CHECK_EVERY:
            return False
        cost = self.check_seconds + self.ops * self.DISPATCH_SECONDS
        elapsed = time.perf_counter() - self.started
        return cost > self.allowed * max(elapsed - cost, 1e-9)

    def boundary_spent(self, seconds: float) -> None:
        """One boundary hook (module or optimizer step) took ``seconds``."""
        self.boundary_seconds += seconds

    @property
    def allowed(self) -> float:
        """The share of a step the outside-modules mode may cost: what the boundary checks leave of
        ``TOTAL_SHARE`` (median of the recent periods), between ``MIN_SHARE`` and ``SHARE``."""
        return min(self.SHARE, max(self.MIN_SHARE, self.TOTAL_SHARE - _median(self.boundary_shares)))

    @property
    def share(self) -> float:
        """What observing costs, as a share of a step: the larger of our own timing (median of the recent observed
        steps) and, once there are both, the median observed step against the median unobserved one."""
        estimate = _median(self.estimates)
        if len(self.observed) >= 3 and len(self.plain) >= 3:
            plain = _median(self.plain)
            estimate = max(estimate, (_median(self.observed) - plain) / max(plain, 1e-9))
        return estimate

    def period_ended(self) -> bool:
        """Account for the period that just ended (from one outermost module call to the next: a training step, or
        one inference with its post-processing); True when the next one is observed.

        Past the first steps, one step in ``PROBE_EVERY`` is left unobserved while every step is, to time a step
        without us (what our own timing cannot see: the dispatch into Python, a debugger's tracing of our code)."""
        now = time.perf_counter()
        elapsed, self.started = now - self.started, now
        if st.passthrough:  # a long stretch cut short: neither an observed step nor a plain one
            st.passthrough = False
        elif st.observing and self.ops:
            cost = self.check_seconds + self.ops * self.DISPATCH_SECONDS
            self.estimates.append(cost / max(elapsed - cost, 1e-9))
            self.observed.append(elapsed)
        elif not st.observing:
            self.plain.append(elapsed)
        self.boundary_shares.append(self.boundary_seconds / max(elapsed, 1e-9))
        self.boundary_seconds = 0.0
        if len(self.estimates) >= 3:
            over = self.share / self.allowed
            self.stride = 1 if over <= 1 else min(self.MAX_STRIDE, math.ceil(over))
        self.ops = 0
        self.check_seconds = 0.0
        self.steps += 1
        if not self.active or self.steps <= self.FIRST_STEPS:
            return True
        if self.stride == 1:
            return self.steps % self.PROBE_EVERY != 0
        return self.steps % self.stride == 0

    def note(self) -> str:
        """Why a birth outside modules was not seen at its op (for the report of a step that was not observed)."""
        return t(
            "; this step's ops outside modules were not checked one by one (checking them costs {0} of a step, so "
            "the sentinel observes one step in {1})",
            f"{self.share:.0%}",
            self.stride,
        )


budget = Budget()


def _median(values: collections.deque[float]) -> float:
    return sorted(values)[len(values) // 2] if values else 0.0
