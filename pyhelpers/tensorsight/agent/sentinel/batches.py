"""Batches a DataLoader hands over: fetched without the outside-modules mode once the first batches were, and checked
once, whole, when the iterator returns them.

A DataLoader in the main process (``num_workers=0``) runs the dataset's ``__getitem__`` once per sample and ``collate``
once per batch: hundreds of small ops per step that the mode (``outside``), checking op by op, slowed several times
over (a tabular program's data phase went from 1.3 to 5.5 ms per step, enough to tip the data-loading verdict). So:

- the first ``OP_CHECKED_FETCHES`` fetches of the process run as before, the mode checking their ops when it is on:
  a NaN/Inf made in ``__getitem__`` on a row of the first batches is named at its line;
- later fetches run with the mode off (``st.library``: ``outside.sync_mode`` keeps it off the stack), as in plain
  Python;
- every batch, fetched either way, from workers too, is checked when it is handed over: one sum per floating-point
  tensor (``reading.fast_suspects``). A NaN/Inf there came in with the data, whether it was made in a worker, in an
  unchecked fetch, or before training (a ``TensorDataset`` over a tensor that already held it: its targets never
  reach the model, whose input check would see the rest). It is reported at the user's line that asked for the
  batch (the ``for ... in loader`` line), naming the dataset's ``__getitem__`` and, when numpy warned of making such
  values, numpy's line (``numpy_warnings``).

Installed by ``boundaries.install``; reports through ``records``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from tensorsight.agent.runtime.guard import never_raise
from tensorsight.agent.runtime.tensor_walk import exact_counts
from tensorsight.agent.runtime.transforming import skip_frames
from tensorsight.agent.runtime.user_code import is_user_file
from tensorsight.agent.sentinel.numpy_warnings import with_origin
from tensorsight.agent.sentinel.outside import sync_mode, with_mode_off
from tensorsight.agent.sentinel.reading import fast_suspects, tensors_in, user_frame
from tensorsight.agent.sentinel.records import counts_text, publish, title_of
from tensorsight.agent.sentinel.state import silenced, st, sw
from tensorsight.core.l10n import t

OP_CHECKED_FETCHES = 8  # fetches per process whose ops the mode checks one by one (when it is on)
_fetches = [0]


def fetch_boundary(original: Callable[..., Any], check: Callable[..., None]) -> Callable[..., Any]:
    """``_BaseDataLoaderIter.__next__``: the program's call, unchanged, with the mode off past the first fetches, and
    the batch it returns handed to ``check`` (``check_batch``, timed by the caller)."""

    def __next__(*args: Any, **kwargs: Any) -> Any:
        if not sw.enabled or sw.first_reported or st.busy:
            return original(*args, **kwargs)
        _fetches[0] += 1
        if _fetches[0] <= OP_CHECKED_FETCHES:
            batch = original(*args, **kwargs)
            with_mode_off(check, args[0] if args else None, batch)  # our reads are no ops of the program's
            return batch
        st.library += 1
        sync_mode()
        try:
            batch = original(*args, **kwargs)
            check(args[0] if args else None, batch)
            return batch
        finally:
            st.library -= 1
            sync_mode()

    skip_frames(__next__.__code__, calls_too=False)  # the program's call inside is Dynamo's to compile
    return __next__


@never_raise()
def check_batch(iterator: Any, batch: Any) -> None:
    """One sum per floating-point tensor of ``batch``; a NaN/Inf is reported as data that came in (module docstring)."""
    if silenced() or st.busy or st.replay is not None:
        return
    tensors = [x for x in tensors_in(batch) if x.is_floating_point()]
    if not tensors:
        return
    bad = fast_suspects(tensors)
    if not bad:
        return
    st.busy = True
    try:
        _report(iterator, batch, tensors, bad)
    finally:
        st.busy = False


def _report(iterator: Any, batch: Any, tensors: list[Any], bad: list[int]) -> None:
    counts = exact_counts([tensors[i] for i in bad])
    if not counts:
        return  # a finite sum that overflowed
    first = tensors[bad[0]]
    which = t(
        "tensor {0} of the batch ({1} {2})",
        bad[0] + 1,
        list(first.shape),
        str(first.dtype).replace("torch.", ""),
    )
    what = t(
        "the batch the DataLoader handed over holds {0} in {1}: it came in with the data{2}",
        counts_text(counts),
        which,
        _made_by(iterator),
    )
    frame = user_frame()
    what, where = with_origin(what, counts, frame)
    publish(
        "data",
        "(DataLoader batch)",
        counts,
        frame,
        what=what,
        inputs=(),
        output=first,
        title=title_of(counts, born=False),
        **where,
    )


def _made_by(iterator: Any) -> str:
    """Where the user's dataset code is, read from its class (nothing runs): `` (made by Rows.__getitem__ at
    data.py:12)``; nothing for a library's dataset (``TensorDataset``)."""
    dataset = getattr(iterator, "_dataset", None)
    code = getattr(getattr(type(dataset), "__getitem__", None), "__code__", None)
    if code is None or not is_user_file(code.co_filename):
        return ""
    place = f"{type(dataset).__name__}.__getitem__ at {os.path.basename(code.co_filename)}:{code.co_firstlineno}"
    workers = getattr(iterator, "_num_workers", 0)
    if workers:
        return t(" (made by {0}, in {1} worker processes)", place, workers)
    return t(" (made by {0})", place)
