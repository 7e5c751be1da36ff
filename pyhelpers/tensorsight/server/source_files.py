"""Reading a source file the server did not get from the editor: a runtime finding's file that is not open.

A finding's ``file`` comes from a debugged process (``server`` reads it to place the diagnostic on the line), so it
may name anything: a FIFO (an ``open`` that never returns), ``/dev/zero`` (a read that never ends), a file outside the
project. ``source_lines`` reads a path only when it lies inside one of the given folders (the workspace, the running
scripts' folders) once symlinks are resolved, is a regular file (checked on the opened descriptor, which is opened
non-blocking, so a FIFO cannot stall it) and is at most ``MAX_SOURCE_BYTES``; otherwise the answer is None and the
diagnostic goes on the line without reading. It blocks, so the server calls it in a worker thread.

The static rules read the project files an open script imports through ``project_reader``: the editor's open buffers
first, else ``source_lines`` under the same rules (only ``.py`` files).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Mapping

MAX_SOURCE_BYTES = 2 << 20


def inside(path: str, folders: Iterable[str]) -> bool:
    """Whether ``path`` (symlinks resolved) is in one of ``folders`` (or below)."""
    try:
        real = os.path.realpath(path)
        for folder in folders:
            root = os.path.realpath(folder)
            if os.path.commonpath([real, root]) == root:
                return True
    except (OSError, ValueError):  # another drive on Windows, an odd path
        return False
    return False


def source_lines(path: str, folders: Iterable[str], max_bytes: int = MAX_SOURCE_BYTES) -> list[str] | None:
    """The file's lines (UTF-8, undecodable bytes replaced), or None when it may not or cannot be read."""
    if not inside(path, folders):
        return None
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError:
        return None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode) or status.st_size > max_bytes:
            return None
        data = os.read(descriptor, max_bytes + 1)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    if len(data) > max_bytes:  # it grew since the fstat
        return None
    return data.decode("utf-8", errors="replace").splitlines(keepends=True)


def project_reader(
    buffers: Mapping[str, str], folders: Iterable[str], normalize: Callable[[str], str]
) -> Callable[[str], str | None]:
    """``read(path)`` for the static rules' project: an open buffer's text (``buffers`` keyed by ``normalize``d
    path), else a ``.py`` file's text when ``source_lines`` may read it; None otherwise."""
    allowed = list(folders)

    def read(path: str) -> str | None:
        text = buffers.get(normalize(path))
        if text is not None:
            return text
        if not path.endswith(".py"):
            return None
        lines = source_lines(path, allowed)
        return "".join(lines) if lines is not None else None

    return read
