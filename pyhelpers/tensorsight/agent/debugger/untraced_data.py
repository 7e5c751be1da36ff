"""Runs a DataLoader's batch plumbing untraced by the debugger while nothing could stop in it.

Armed under a debugger by ``agent.runtime.install`` (``DEBUGGER_FEATURES``), once the program imports torch. Under
pydevd on Python < 3.12 every Python call pays the tracer, and a batch is many calls in torch's own code: in each
worker process the fetch (the dataset's ``__getitem__`` per sample, the collate function), and in the training
process the read of the finished batch from the workers' queue (``_MultiProcessingDataLoaderIter._try_get_data``:
the unpickling of every tensor). On ``benchmarks/bench_debug_run.py``'s 2-core machine the traced workers also take
CPU from the training process.

So both run with the thread's tracer off (``runtime.untraced_hooks``), checked at each call, when pydevd (the
worker's own, in a worker) could not stop there (``untraced.nothing_to_hit`` with ``anywhere``): no line breakpoint
in any file, the user's included (the dataset's code is the user's), no function breakpoint, no "raised" or
"user-unhandled" exception filter, no plugin breakpoint, and the thread is not stepping (a Step Into after a stop
still steps into ``__getitem__``). A breakpoint set while the program runs reaches the next batch: the worker's
session gets it from the editor as before, and the next fetch runs traced. A pause waits for the batch in hand.

Without a debugger, or where the private names moved, nothing is wrapped. On Python 3.12+ (pydevd on
``sys.monitoring``, where a code object with nothing to stop at costs nothing after its first call; see
``agent.debugger.untraced``) the hooks are not armed and a batch runs as it is; only the worker's hiding of our
frames applies.
"""

from __future__ import annotations

import threading
import types
from collections.abc import Callable
from typing import Any

from tensorsight.agent.debugger import pause
from tensorsight.agent.debugger.untraced import nothing_to_hit
from tensorsight.agent.runtime.forks import in_forked_children
from tensorsight.agent.runtime.guard import never_raise, report_once
from tensorsight.agent.runtime.lazy_import import when_imported
from tensorsight.agent.runtime.patches import Patches
from tensorsight.agent.runtime.untraced_hooks import armed, untraced_hook

_patches = Patches("untraced_data")
_untraced_batches = [0]  # batches fetched or read untraced in this process (read by the tests)
_in_worker = [False]  # in a forked child: its new debugger must be told to hide our frames too


def untraced_batches() -> int:
    """How many fetches or batch reads ran untraced in this process so far."""
    return _untraced_batches[0]


def nothing_could_stop_here() -> bool:
    """True when this process's debugger could not stop on this thread in code the program did not write or did."""
    py_db = pause.global_debugger()
    return py_db is not None and nothing_to_hit(py_db, threading.current_thread(), anywhere=True)


def _untraced_when_quiet(original: Callable[..., Any]) -> Callable[..., Any]:
    untraced = untraced_hook(original, aside=original)  # while torch traces: the fetch as it is

    def when_quiet(*args: Any, **kwargs: Any) -> Any:
        if _in_worker[0]:
            _in_worker[0] = False
            pause.hide_agent_files()  # this frame sits under the dataset's in the worker's Call Stack
        if not armed() or not nothing_could_stop_here():
            return original(*args, **kwargs)
        _untraced_batches[0] += 1
        return untraced(*args, **kwargs)

    return when_quiet


@never_raise()
def _wrap(torch: types.ModuleType) -> None:
    import torch.utils.data._utils.fetch as fetch
    import torch.utils.data.dataloader as dataloader

    owners = [
        (fetch, "_MapDatasetFetcher", "fetch"),
        (fetch, "_IterableDatasetFetcher", "fetch"),
        (dataloader, "_MultiProcessingDataLoaderIter", "_try_get_data"),
    ]
    for module, class_name, method in owners:
        owner = getattr(module, class_name, None)
        if owner is None or not callable(getattr(owner, method, None)):
            report_once(f"untraced-data-{class_name}", f"torch's {class_name}.{method} not found: batches run traced")
            continue
        _patches.replace(owner, method, _untraced_when_quiet)


@never_raise()
def _note_worker() -> None:
    _in_worker[0] = True
    pause.forget_hidden()


def arm(origin: str = "debugger") -> None:
    """Under a debugger: wrap the fetchers and the batch read once torch is imported."""
    if origin != "debugger":
        return
    in_forked_children(_note_worker)
    when_imported("torch", _wrap)
