"""``agent.runtime.guard``: the exception firewall every entry point of the agent goes through."""

from __future__ import annotations

import pytest

from tensorsight.agent.runtime import guard


@pytest.fixture(autouse=True)
def fresh_reports(monkeypatch):
    monkeypatch.setattr(guard, "_reported", set())


def test_report_once_prints_one_prefixed_line_per_key(capsys):
    guard.report_once("key-a", "first")
    guard.report_once("key-a", "again")
    guard.report_once("key-b", "other")
    assert capsys.readouterr().err == "[tensorsight] first\n[tensorsight] other\n"


def test_report_once_survives_a_closed_stderr(monkeypatch):
    class Closed:
        def write(self, text):
            raise ValueError("I/O operation on closed file")

    monkeypatch.setattr("sys.stderr", Closed())
    guard.report_once("closed", "nobody hears this")  # must not raise


def test_never_raise_returns_the_fallback_and_reports_once_per_function(capsys):
    @guard.never_raise(fallback=[])
    def broken(value):
        raise KeyError(value)

    assert broken("x") == []
    assert broken("y") == []
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    assert "internal error in" in err[0] and "broken" in err[0] and "KeyError" in err[0]


def test_never_raise_keeps_the_result_and_the_identity_of_the_function(capsys):
    @guard.never_raise()
    def add(a, b=1):
        """Adds."""
        return a + b

    assert add(2, b=3) == 5
    assert add.__name__ == "add" and add.__doc__ == "Adds."
    assert capsys.readouterr().err == ""


def test_never_raise_lets_keyboard_interrupt_and_system_exit_through():
    @guard.never_raise()
    def interrupted():
        raise KeyboardInterrupt

    @guard.never_raise()
    def exits():
        raise SystemExit(3)

    with pytest.raises(KeyboardInterrupt):
        interrupted()
    with pytest.raises(SystemExit):
        exits()
