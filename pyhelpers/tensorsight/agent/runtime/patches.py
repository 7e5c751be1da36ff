"""Library functions replaced by our thin wrappers, and put back: the one mechanism behind every feature that
observes a torch function by wrapping it (the phase clock, the gradient-clearing watch, the clipping watch, the
functional-loss relays in ``agent/measurement``).

Each feature owns one ``Patches`` named after it. ``replace`` swaps the function a name holds for ``make(original)``,
once per feature: the wrapper carries the feature's own mark (``functools.wraps`` copies marks onto any wrapper
stacked on ours, so each feature has its own name for it), and every owner given that holds the same function (torch
re-exports many under two names) gets the same wrapper. ``restore`` puts every original back, newest first, where
the name still holds our wrapper; a wrapper someone stacked on top of ours stays theirs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any


class Patches:
    """The functions one feature replaced, to put back on ``restore``."""

    def __init__(self, feature: str) -> None:
        self.mark = f"__tensorsight_{feature}__"
        self._replaced: list[tuple[Any, str, Any, Any]] = []

    def replace(
        self, owners: Any | Sequence[Any], name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]
    ) -> Callable[..., Any] | None:
        """Point ``name`` on each owner holding the first owner's function at one ``make(original)``; None when
        there is no such function or this feature already wrapped it."""
        owners = tuple(owners) if isinstance(owners, (list, tuple)) else (owners,)
        original = getattr(owners[0], name, None)
        if original is None or getattr(original, self.mark, False):
            return None
        wrapper = functools.wraps(original)(make(original))
        setattr(wrapper, self.mark, True)
        for owner in owners:
            if getattr(owner, name, None) is original:
                setattr(owner, name, wrapper)
                self._replaced.append((owner, name, original, wrapper))
        return wrapper

    def restore(self) -> None:
        """Put every original back, newest first."""
        for owner, name, original, wrapper in reversed(self._replaced):
            if getattr(owner, name, None) is wrapper:
                setattr(owner, name, original)
        self._replaced.clear()

    def __bool__(self) -> bool:
        return bool(self._replaced)
