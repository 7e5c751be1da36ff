"""``agent.runtime.lazy_import``: callbacks after the program imports a module, without importing it for them.

A throwaway module written to tmp_path stands for torch: it is imported after the callback is registered, so the meta
path finder is what fires it. The finder list, the callbacks and the module are restored after each test.
"""

from __future__ import annotations

import importlib
import sys
import uuid

import pytest

from tensorsight.agent.runtime import guard, lazy_import
from tensorsight.agent.runtime.lazy_import import when_imported


@pytest.fixture
def probe(tmp_path, monkeypatch):
    """The name of a module that exists on sys.path but has not been imported yet."""
    monkeypatch.setattr(lazy_import, "_callbacks", {})
    monkeypatch.setattr(lazy_import, "_ready", set())
    monkeypatch.setattr(guard, "_reported", set())
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    name = f"ts_lazy_probe_{uuid.uuid4().hex}"
    (tmp_path / f"{name}.py").write_text("import sys\nLOADED_BY = sys.modules[__name__].__spec__.loader\nVALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield name
    sys.modules.pop(name, None)


def test_the_callback_runs_right_after_a_later_import(probe):
    calls = []
    when_imported(probe, calls.append)
    assert calls == [] and probe not in sys.modules  # registering imports nothing
    module = importlib.import_module(probe)
    assert calls == [module]
    assert module.VALUE == 42  # the module had executed when the callback saw it


def test_the_real_loader_is_put_back_on_the_module(probe):
    when_imported(probe, lambda module: None)
    module = importlib.import_module(probe)
    assert type(module.__loader__).__name__ == "SourceFileLoader"
    assert module.__spec__.loader is module.__loader__
    assert not isinstance(module.__loader__, lazy_import._NotifyingLoader)


def test_every_callback_fires_once_and_later_registrations_fire_at_once(probe):
    first, second, late = [], [], []
    when_imported(probe, first.append)
    when_imported(probe, second.append)
    module = importlib.import_module(probe)
    importlib.reload(module)  # a reload is not a new first import
    assert first == [module] and second == [module]
    when_imported(probe, late.append)
    assert late == [module]


def test_an_already_imported_module_fires_immediately_without_the_finder(monkeypatch):
    monkeypatch.setattr(lazy_import, "_callbacks", {})
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    finders = list(sys.meta_path)
    calls = []
    when_imported("json", calls.append)
    assert calls == [sys.modules["json"]]
    assert sys.meta_path == finders
    assert lazy_import._callbacks == {}


def test_a_failing_callback_never_breaks_the_import_and_is_reported_once(probe, capsys):
    after = []

    def broken(module):
        raise RuntimeError("feature bug")

    when_imported(probe, broken)
    when_imported(probe, after.append)
    module = importlib.import_module(probe)
    assert module.VALUE == 42
    assert after == [module]  # the next callback still ran
    err = capsys.readouterr().err
    assert err.count("[tensorsight]") == 1 and "feature bug" in err and probe in err


def test_a_missing_module_is_left_to_the_normal_import_error(probe):
    name = probe + "_absent"
    when_imported(name, lambda module: pytest.fail("no module, no callback"))
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(name)
