"""Start a TensorSight process isolated from the workspace: ``python -I launch.py [--path DIR]... [--after DIR]...
[--chdir DIR] -m MODULE [ARG...]``.

The extension starts every Python process of its own this way (the language server, the doctor, profile, shapes,
overfit, TensorBoard, the debug adapter; see ``extension/src/common/pythonLaunch.ts``), never as ``python -m`` from the
workspace: ``-m`` puts the working directory first on ``sys.path``, so a workspace's ``json.py``, ``dataclasses.py`` or
``tensorsight/`` would be imported in place of the standard library or of us, trusted workspace or not. ``-I`` drops
``PYTHONPATH``, the user site and (3.11+) the script's folder; the tools, which run the user's code, start with ``-E``
instead (the user's own ``pip install --user`` packages stay), so the script's folder is prepended there, as on 3.10
even under ``-I``: it is removed here before anything else is imported. The directories the process needs (our
``pyhelpers``, the bundled libraries) come explicitly as ``--path``, in order, ahead of the standard library. The
user's own ``PYTHONPATH``, which a tool's script may need, comes as ``--after``, behind the standard library and
site-packages, so that an entry such as ``.`` cannot put a workspace's ``json.py`` ahead of the real one.
``--chdir`` moves to the folder a user's script expects to run in only after the path is fixed (a relative entry is
then resolved there, as ``PYTHONPATH`` would be). Standard library only, and nothing of the path's new entries
imported before it is set.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import NamedTuple

USAGE = "usage: launch.py [--path DIR]... [--after DIR]... [--chdir DIR] -m MODULE [ARG...]"


class Launch(NamedTuple):
    search: list[str]  # first on sys.path, in order
    after: list[str]  # last on sys.path, in order
    chdir: str | None
    module: str
    arguments: list[str]


def parse(argv: list[str]) -> Launch:
    """The bootstrap's own arguments."""
    search: list[str] = []
    after: list[str] = []
    chdir: str | None = None
    index = 0
    while index < len(argv):
        option = argv[index]
        if option == "-m" and index + 1 < len(argv):
            return Launch(search, after, chdir, argv[index + 1], argv[index + 2 :])
        if option in ("--path", "--after", "--chdir") and index + 1 < len(argv):
            if option == "--path":
                search.append(argv[index + 1])
            elif option == "--after":
                after.append(argv[index + 1])
            else:
                chdir = argv[index + 1]
            index += 2
            continue
        raise SystemExit(f"{USAGE}\nunexpected argument: {option!r}")
    raise SystemExit(USAGE)


def isolated_path(current: list[str], search: list[str], own_folder: str, after: Sequence[str] = ()) -> list[str]:
    """``search`` (existing directories, each once), then ``current`` without the script's own folder or the working
    directory (which Python 3.10 puts there even under ``-I``), then ``after``."""
    head = list(dict.fromkeys(entry for entry in search if entry and os.path.isdir(entry)))
    tail = [
        entry
        for entry in current
        if entry not in head and entry not in ("", ".") and os.path.abspath(entry) != own_folder
    ]
    tail += [entry for entry in dict.fromkeys(after) if entry and entry not in head and entry not in tail]
    return head + tail


def main() -> None:
    launch = parse(sys.argv[1:])
    if launch.chdir is not None:
        os.chdir(launch.chdir)
    own_folder = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = isolated_path(sys.path, launch.search, own_folder, launch.after)
    sys.argv = [launch.module, *launch.arguments]
    import runpy  # only now: the path no longer names the workspace

    runpy.run_module(launch.module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
