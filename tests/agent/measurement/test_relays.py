"""The observing relay of agent.measurement.relay_importlib_bootstrap on its own: the original's result, arguments
and exceptions unchanged, one observation per outermost call of a family, none while it looks away."""

from __future__ import annotations

import pytest

from tensorsight.agent.measurement.relay_importlib_bootstrap import Nesting, observing_relay


def loss(x: float, scale: float = 1.0) -> float:
    if x < 0:
        raise ValueError("negative")
    return x * scale


def test_a_relay_returns_what_the_original_returns_and_reports_the_outermost_call_once():
    seen: list[float] = []
    nesting = Nesting()
    relay = observing_relay(loss, seen.append, nesting, lambda: False)
    outer = observing_relay(lambda x: relay(x) + 1.0, seen.append, nesting, lambda: False)  # a module calling F.*
    assert relay(2.0, scale=3.0) == 6.0 and seen == [6.0]
    assert outer(2.0) == 3.0 and seen == [6.0, 3.0]  # the inner call is part of the outer one
    assert relay.__name__ == "loss" and relay.__wrapped__ is loss  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="negative"):
        relay(-1.0)
    assert nesting.depth == 0 and seen == [6.0, 3.0]


def test_a_relay_that_looks_away_only_calls_the_original():
    seen: list[float] = []
    relay = observing_relay(loss, seen.append, Nesting(), lambda: True)
    assert relay(4.0) == 4.0 and seen == []
