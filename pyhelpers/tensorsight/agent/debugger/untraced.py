"""Runs the program's imports of libraries (torch, numpy, torch's lazy submodules...) with the debugger's tracer off.

Armed under a debugger by ``agent.runtime.install`` (``DEBUGGER_FEATURES``); ``agent.runtime.lazy_import`` also uses
``untraced_import`` around the loader of a library the agent waits for. Under pydevd on Python < 3.12
(``sys.settrace``) every Python call pays the tracer, and importing a library is mostly calls into its own module
bodies: ``import torch`` is over a million of them (1.5 s of CPU plain, 3.0 s traced on a 2-core machine), and
``torch.optim.Adam(...)`` imports ``torch._dynamo`` lazily (about as much again). Those were the largest shares of a
short "Debug Training" run's overhead (``benchmarks/bench_debug_run.py``).

``arm`` puts a finder first on ``sys.meta_path``. For the outermost import on a traced thread of a module that lives
in a library folder (stdlib, site-packages; see ``agent.runtime.user_code.is_user_file``), it wraps the module's
loader so that the module body, and every import nested in it, runs untraced, when ``nothing_to_hit`` says pydevd has
nothing there to stop at, checked at that moment:

- no line breakpoint in a library file (a breakpoint in torch's own code is hit: the import runs traced);
- no function breakpoint, no "raised" / "user-unhandled" exception filter, no plugin breakpoint (those stop inside
  library code);
- the importing thread is not stepping (a Step Into on the import line steps into the library, as before).

The check runs again at every nested import inside the region, so a breakpoint the user adds while the import runs
turns tracing back on for the rest of it. Line breakpoints in the user's own files do not keep the import traced:
library module bodies do not call the program's code. The one exception is a callback the program registered before
the import that a library module body happens to trigger (a logging handler, ``warnings.showwarning``, a ``__del__``
collected mid-import); such a callback runs untraced for the duration of that import and its breakpoints do not stop
there. The switch is debugpy's public ``debugpy.trace_this_thread``; tracing is restored in a ``finally``, so the frame
that imported the library stops at its next breakpoint as before. Without a debugger, or where pydevd does not trace
through ``sys.settrace``, nothing changes.

Python 3.12+: pydevd traces through ``sys.monitoring`` (PEP 669). Its callbacks return ``DISABLE`` for a code object
with nothing to stop at (a library's, ours), so each code object pays once, not per call; turning the thread's
monitoring off (``trace_this_thread(False)``) would keep those events firing instead. Nothing is armed there.
Measured in a debugged 3.12 process (thread CPU time, a loaded 2-core machine): a call into an agent function
29 ns, 28 ns without a debugger (3.11 under pydevd: 280 ns); ``import torch`` no slower than without a debugger;
a training step of a 3-layer MLP with the agent's hooks, in two runs, 0.69 and 1.64 ms with pydevd's events on
against 0.67 and 1.49 ms with all of them switched off in the same process (within the machine's noise).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from tensorsight.agent.debugger.pause import global_debugger
from tensorsight.agent.runtime import untraced_hooks
from tensorsight.agent.runtime.guard import report_once
from tensorsight.agent.runtime.user_code import is_user_file

_local = threading.local()  # .region: True while this thread runs an untraced import; .searching: names being found
_regions = [0]  # untraced imports begun in this process (read by the tests through ``untraced_imports``)


def untraced_imports() -> int:
    """How many imports have run untraced in this process so far."""
    return _regions[0]


def no_breakpoint_set(py_db: Any, *, anywhere: bool = False) -> bool:
    """True when pydevd's breakpoint tables hold nothing that stops inside library code: no line breakpoint in a
    library file, no function breakpoint, no "raised" or "user-unhandled" exception filter, no plugin breakpoint; with
    ``anywhere``, no line breakpoint in the user's own files either. The "uncaught" filter does not count.

    Reads pydevd's tables (private API, checked on debugpy 1.8.x); anything unreadable counts as something set.
    Also read by ``forked_start`` (whether a forked worker may start before its session is configured).
    """
    try:
        if py_db.function_breakpoint_name_to_breakpoint or py_db.break_on_caught_exceptions:
            return False
        if py_db.break_on_user_uncaught_exceptions or py_db.has_plugin_line_breaks or py_db.has_plugin_exception_breaks:
            return False
        return not any(
            lines and (anywhere or not is_user_file(path)) for path, lines in list(py_db.breakpoints.items())
        )
    except Exception:  # noqa: BLE001 - the API moved: something may be set
        return False


def nothing_to_hit(py_db: Any, thread: threading.Thread | None = None, *, anywhere: bool = False) -> bool:
    """True when pydevd, as configured right now, cannot stop inside library code on ``thread`` (default: this one);
    with ``anywhere``, nor in the user's own files (code that may call the program's: ``untraced_data``).

    ``no_breakpoint_set`` and the thread is not stepping; anything unreadable counts as "something to hit", so the
    caller keeps tracing.
    """
    if not no_breakpoint_set(py_db, anywhere=anywhere):
        return False
    try:
        info = getattr(thread or threading.current_thread(), "additional_info", None)
        step = getattr(info, "pydev_step_cmd", -1)
        return step is None or step == -1
    except Exception:  # noqa: BLE001 - the API moved: keep tracing
        return False


def _toggle() -> Any:
    debugpy = sys.modules.get("debugpy")
    return getattr(debugpy, "trace_this_thread", None)


@contextlib.contextmanager
def untraced_import() -> Iterator[None]:
    """The body runs untraced by the debugger on this thread when it was traced and ``nothing_to_hit``."""
    toggle = _toggle()
    if getattr(_local, "region", False) or toggle is None or sys.gettrace() is None or "pydevd" not in sys.modules:
        yield
        return
    py_db = global_debugger()
    if py_db is None or not nothing_to_hit(py_db):
        yield
        return
    try:
        toggle(False)
    except Exception as exc:  # noqa: BLE001 - the import goes ahead traced
        report_once("untraced-import", f"could not pause the debugger's tracing during an import: {exc!r}")
        yield
        return
    _local.region = True
    _regions[0] += 1
    try:
        yield
    finally:
        _local.region = False
        try:
            toggle(True)
        except Exception as exc:  # noqa: BLE001
            report_once("untraced-import-restore", f"could not resume the debugger's tracing after an import: {exc!r}")


def _recheck_region() -> None:
    """Inside an untraced import: turn tracing back on for the rest of it if there is now something to hit."""
    py_db = global_debugger()
    if py_db is not None and nothing_to_hit(py_db):
        return
    toggle = _toggle()
    _local.region = False  # the region's ``finally`` still calls toggle(True): enabling twice is harmless
    if toggle is not None:
        try:
            toggle(True)
        except Exception as exc:  # noqa: BLE001
            report_once("untraced-import-restore", f"could not resume the debugger's tracing in an import: {exc!r}")


class _UntracedLoader(importlib.abc.Loader):
    """Delegates to the module's real loader; its ``exec_module`` runs inside ``untraced_import``."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._inner
        if module.__spec__ is not None:
            module.__spec__.loader = self._inner
        with untraced_import():
            self._inner.exec_module(module)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)


class UntracedLibraryFinder(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path``: hands back library modules' specs with an untraced loader; finds nothing itself."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if getattr(_local, "region", False):
            _recheck_region()
            return None
        searching: set[str] | None = getattr(_local, "searching", None)
        if searching is None:
            searching = _local.searching = set()
        if fullname in searching or target is not None or fullname in sys.modules:  # a reload: leave it alone
            return None
        if sys.gettrace() is None or "pydevd" not in sys.modules:
            return None
        searching.add(fullname)
        try:
            spec = importlib.util.find_spec(fullname)
        except Exception:  # noqa: BLE001 - let the import system report it as it would
            return None
        finally:
            searching.discard(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        if not spec.origin or not spec.has_location or is_user_file(spec.origin):
            return None
        spec.loader = _UntracedLoader(spec.loader)
        return spec


_finder = UntracedLibraryFinder()


def interpreter_settrace() -> Any:
    """The interpreter's own ``sys.settrace`` as pydevd keeps it (``sys.settrace`` itself is pydevd's warning
    wrapper while it debugs), or None when pydevd does not trace through it."""
    tracing = sys.modules.get("pydevd_tracing")
    settrace = getattr(tracing, "_original_settrace", None)
    if settrace is None or type(settrace) is not type(sys.gettrace) or getattr(settrace, "__name__", "") != "settrace":
        return None
    return settrace


def arm(origin: str = "debugger") -> None:
    """Under a debugger that traces with ``sys.settrace``: put the finder first on ``sys.meta_path`` (once), and
    let the agent's hooks run untraced (``runtime.untraced_hooks``)."""
    if origin != "debugger" or sys.version_info >= (3, 12) or _toggle() is None:
        return
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    settrace = interpreter_settrace()
    if settrace is not None:
        untraced_hooks.arm(settrace)
