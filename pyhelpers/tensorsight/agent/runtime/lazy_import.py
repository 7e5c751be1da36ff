"""Run agent code right after the user's program imports a library (torch, numpy), never importing it ourselves.

The agent is installed before user code runs, when torch is usually not imported yet; importing it for the user
would cost seconds and change their process. ``when_imported("torch", arm)`` calls ``arm(module)`` immediately if
torch is already imported, otherwise right after its import completes (from a meta path finder that wraps the
module's loader). Under a debugger the library's own import runs with the tracer off (``agent.debugger.untraced``).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

from tensorsight.agent.runtime.guard import report_once

Callback = Callable[[ModuleType], None]

_callbacks: dict[str, list[Callback]] = {}
_searching: set[str] = set()
_ready: set[str] = set()  # imports whose callbacks have fired: later registrations run at once
_lock = threading.RLock()


def _fire(name: str, module: ModuleType) -> None:
    with _lock:
        _ready.add(name)
        pending = _callbacks.pop(name, [])
    for callback in pending:
        try:
            callback(module)
        except Exception as exc:  # noqa: BLE001 - a failing feature must not break the user's import
            report_once(f"post-import-{name}-{id(callback)}", f"hook after importing {name} failed: {exc!r}")


class _NotifyingLoader(importlib.abc.Loader):
    """Delegates to the real loader and fires the callbacks once the module has executed."""

    def __init__(self, inner: Any, name: str) -> None:
        self._inner = inner
        self._name = name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._inner
        if module.__spec__ is not None:
            module.__spec__.loader = self._inner
        # under a debugger, the library's own import runs untraced (looked up, not imported: the debugger glue is
        # loaded whenever a debugger is; see agent/debugger/untraced.py for what it saves and what it skips)
        untraced = sys.modules.get("tensorsight.agent.debugger.untraced")
        with untraced.untraced_import() if untraced is not None else contextlib.nullcontext():
            self._inner.exec_module(module)
        _fire(self._name, module)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)


class _PostImportFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _callbacks or fullname in _searching:
            return None
        _searching.add(fullname)
        try:
            spec = importlib.util.find_spec(fullname)
        except Exception:  # noqa: BLE001
            return None
        finally:
            _searching.discard(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _NotifyingLoader(spec.loader, fullname)
        return spec


_finder = _PostImportFinder()


def when_imported(name: str, callback: Callback) -> None:
    """Call ``callback(module)`` now if ``name`` is imported, else right after the program imports it."""
    module = sys.modules.get(name)
    ready = name in _ready or (module is not None and not _initialising(module))
    if module is not None and getattr(module, "__spec__", None) is not None and ready:
        try:
            callback(module)
        except Exception as exc:  # noqa: BLE001
            report_once(f"post-import-{name}-{id(callback)}", f"hook after importing {name} failed: {exc!r}")
        return
    with _lock:
        _callbacks.setdefault(name, []).append(callback)
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)


def _initialising(module: ModuleType) -> bool:
    spec = getattr(module, "__spec__", None)
    return bool(getattr(spec, "_initializing", False))
