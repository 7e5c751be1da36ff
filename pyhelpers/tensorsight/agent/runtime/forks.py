"""What runs in a forked child of the program (a DataLoader worker, forked from the training thread): features that
leave something on that thread for the parent's steps to take away (a torch-function mode) register here what the
child must undo at once, since no step of the parent ever runs there.

Used by ``agent.sentinel.boundaries`` and ``agent.shapes.observers``. Stdlib only.
"""

from __future__ import annotations

import os
from collections.abc import Callable

_registered: list[Callable[[], None]] = []  # os.register_at_fork cannot unregister: each callback once per process


def in_forked_children(callback: Callable[[], None]) -> None:
    """Run ``callback`` in every child forked from now on, right after the fork, in the thread that forked. The
    callback must never raise (wrap it in ``guard.never_raise``)."""
    if any(known is callback for known in _registered):
        return
    _registered.append(callback)
    os.register_at_fork(after_in_child=callback)
