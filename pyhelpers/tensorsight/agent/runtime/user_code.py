"""Tells the user's code apart from ours, torch's and the debugger's, to point findings at the user's line.

Findings and stops must name the user's source line that is the cause, never a frame inside torch, numpy, debugpy
or TensorSight itself.
"""

from __future__ import annotations

import functools
import os
import sys
import sysconfig
from collections.abc import Iterator
from types import FrameType

# the installed ``tensorsight`` package folder: every file below it is ours
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_LIBRARY_ROOTS = tuple(
    {os.path.abspath(p) for p in (sysconfig.get_paths().get("stdlib"), sysconfig.get_paths().get("purelib")) if p}
)
_LIBRARY_MARKERS = (
    os.sep + "site-packages" + os.sep,
    os.sep + "dist-packages" + os.sep,
    os.sep + "debugpy" + os.sep,
    os.sep + "pydevd_plugins" + os.sep,
)


def is_user_file(path: str) -> bool:
    """True for a file the user wrote: not ours, not a library, not stdlib, not ``<frozen ...>`` or ``<string>``.

    Each answer is remembered with the working directory it was judged in (``_judged``, which only a relative path
    depends on): the hooks of every training step ask about the same few files, and a remembered answer costs no
    Python call, which is what each call costs under a debugger's tracer.
    """
    if not path or path.startswith("<"):
        return False
    if os.path.isabs(path):  # the usual case: no working directory to ask for (a system call per frame judged)
        return _judged(path, os.sep)
    try:
        working_directory = os.getcwd()
    except OSError:  # the working directory was removed: only an absolute path can be judged
        working_directory = os.sep
    return _judged(path, working_directory)


@functools.lru_cache(maxsize=4096)
def _judged(path: str, working_directory: str) -> bool:
    full = os.path.abspath(os.path.join(working_directory, path))
    if full.startswith(PACKAGE_ROOT + os.sep):
        return False
    if any(marker in full for marker in _LIBRARY_MARKERS):
        return False
    return not any(full.startswith(root + os.sep) for root in _LIBRARY_ROOTS)


@functools.lru_cache(maxsize=4096)
def is_agent_file(path: str) -> bool:
    """True for a file of our own package (asked for every op the NaN sentinel's mode sees: remembered by name)."""
    if not path or path.startswith("<"):
        return False
    return os.path.normcase(os.path.abspath(path)).startswith(os.path.normcase(PACKAGE_ROOT) + os.sep)


def user_frame(start: FrameType | None = None) -> FrameType | None:
    """The innermost frame, from ``start`` (default: the caller) outwards, that runs user code."""
    frame: FrameType | None = start if start is not None else sys._getframe(1)
    while frame is not None:
        if is_user_file(frame.f_code.co_filename):
            return frame
        frame = frame.f_back
    return None


def user_frames(start: FrameType | None, limit: int | None = None) -> Iterator[FrameType]:
    """The frames, from ``start`` outwards, that run user code: at most ``limit`` of them (all without one)."""
    frame, seen = start, 0
    while frame is not None and (limit is None or seen < limit):
        if is_user_file(frame.f_code.co_filename):
            seen += 1
            yield frame
        frame = frame.f_back


def user_location(start: FrameType | None = None) -> tuple[str, int] | None:
    """``(file, line)`` of the innermost user frame, or None when no user code is on the stack."""
    frame = user_frame(start if start is not None else sys._getframe(1))
    if frame is None:
        return None
    return os.path.abspath(frame.f_code.co_filename), frame.f_lineno
