"""The time budget of one debugger request (Variables, hover, watch): how long our summaries may still take.

Used by ``presentation`` around every public entry point the pydevd plugin calls. pydevd gives a Variables request
3 s (``PYDEVD_UNBLOCK_THREADS_ON_VARIABLES_TIMEOUT``) before it prints "Resolving variable children is taking too
long" and resumes the program's other threads, and it asks our provider once per value without saying where a
request starts or ends. So calls that follow each other closely (less than ``REQUEST_GAP_S`` apart) count as one
request, and the first of them starts its clock; each value also has a budget of its own, under the 0.5 s past which
pydevd warns that "Computing repr of … was slow". Costly work asks ``remaining()`` first and does less, marked as
partial in the line, when the budget is short; the rest comes on expand, which is a new request with a new budget.

The clock also learns how fast this machine reduces tensor elements (``elements_per_second``, for a whole summary),
so a summary can tell before it starts whether exact figures fit in what is left. One line also has a glance budget
(``GLANCE_BUDGET_S``): a Variables view lists many values, and a line that reads a 1e8-element tensor three times
over would make the view several times slower than stock debugpy's; past it, a line gives what one pass finds (the
NaN/Inf alarm with exact counts, and the mean) and says that σ and the range come on expand. Pure bookkeeping:
stdlib only, thread-safe.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator

REQUEST_BUDGET_S = 1.0  # a third of pydevd's 3 s, so pydevd's own work and a busy machine still fit
VALUE_BUDGET_S = 0.4  # one value: pydevd warns "Computing repr of … was slow" past 0.5 s
REQUEST_GAP_S = 0.25  # calls further apart than this belong to different requests
GLANCE_BUDGET_S = 0.02  # what one line may spend on its figures before leaving σ, the range or a scan to the expand
INITIAL_ELEMENTS_PER_SECOND = 5e8  # a first guess (2 busy cores: 1e8 float32 in about 0.2 s), then measured
LEARN_FROM_ELEMENTS = 1 << 20
UNLIMITED = 1 << 62


class RequestClock:
    """Time left to the current request, shared by every summary made for it.

    ``call()`` wraps one provider call (re-entrant: a module line that summarises its parameters is one call). A
    call that starts more than ``gap_s`` after the previous one ended opens a new request with ``budget_s``; each
    call also has ``value_budget_s`` of its own, so no single value holds up a request. Code
    outside any call (a program calling ``tensorsight.summarize`` itself) has no time limit.
    """

    def __init__(
        self,
        budget_s: float = REQUEST_BUDGET_S,
        gap_s: float = REQUEST_GAP_S,
        clock: Callable[[], float] = time.monotonic,
        value_budget_s: float = VALUE_BUDGET_S,
    ) -> None:
        self.budget_s = budget_s
        self.value_budget_s = value_budget_s
        self.gap_s = gap_s
        self._clock = clock
        self._lock = threading.Lock()
        self._started = -float("inf")
        self._value_started = -float("inf")
        self._last_end = -float("inf")
        self._depth = 0
        self.elements_per_second = INITIAL_ELEMENTS_PER_SECOND

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        with self._lock:
            now = self._clock()
            if self._depth == 0:
                self._value_started = now
                if now - self._last_end > self.gap_s:
                    self._started = now
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                self._last_end = self._clock()

    def remaining(self) -> float:
        """Seconds left to the current value and request (negative once spent; unlimited outside any request)."""
        with self._lock:
            if self._depth == 0:
                return math.inf
            now = self._clock()
            return min(self.budget_s - (now - self._started), self.value_budget_s - (now - self._value_started))

    def affordable_elements(self) -> int:
        """How many tensor elements an exact summary could still reduce within the budget (no limit: ``UNLIMITED``)."""
        remaining = self.remaining()
        if remaining == math.inf:
            return UNLIMITED
        return max(0, min(UNLIMITED, int(remaining * self.elements_per_second)))

    def glance_left(self) -> float:
        """Seconds left to the current line's glance budget (never more than ``remaining()``)."""
        remaining = self.remaining()
        if remaining == math.inf:
            return math.inf
        with self._lock:
            spent = self._clock() - self._value_started
        return min(remaining, GLANCE_BUDGET_S - spent)

    def glance_elements(self) -> int:
        """How many elements a whole exact summary could reduce within the glance budget (``UNLIMITED`` outside)."""
        left = self.glance_left()
        if left == math.inf:
            return UNLIMITED
        return max(0, min(UNLIMITED, int(left * self.elements_per_second)))

    def learn(self, elements: int, seconds: float) -> None:
        """Fold one measured reduction into the speed estimate (only ones long enough to time reliably)."""
        if seconds < 0.005 or elements < LEARN_FROM_ELEMENTS:
            return  # small reductions time their fixed costs (first calls, imports), not the machine's speed
        speed = elements / seconds
        with self._lock:
            # the slower of the new figure and a moving average: a busy moment should make the next guess cautious
            self.elements_per_second = min(speed, 0.5 * self.elements_per_second + 0.5 * speed)

    def new_request(self) -> None:
        """Forget the current request (tests, and callers that know a request has just begun)."""
        with self._lock:
            self._last_end = -float("inf")
            if self._depth == 0:
                self._started = -float("inf")


CLOCK = RequestClock()
