"""Start a TensorSight process isolated from the workspace: ``python -I launch.py [--path DIR]... [--chdir DIR] -m
MODULE [ARG...]``.

The extension starts every Python process of its own this way (the language server, the doctor, profile, shapes,
overfit, TensorBoard, the debug adapter; see ``extension/src/common/pythonLaunch.ts``), never as ``python -m`` from the
workspace: ``-m`` puts the working directory first on ``sys.path``, so a workspace's ``json.py``, ``dataclasses.py`` or
``tensorsight/`` would be imported in place of the standard library or of us, trusted workspace or not. ``-I`` drops
``PYTHONPATH``, the user site and (3.11+) the script's folder; on 3.10 the script's folder is still prepended, so it is
removed here before anything else is imported. The directories the process needs (our ``pyhelpers``, the bundled
libraries, for the tools the user's own ``PYTHONPATH``) come explicitly as ``--path``, in order, ahead of the standard
library. ``--chdir`` moves to the folder a user's script expects to run in only after the path is fixed (a relative
``--path`` is resolved there, as ``PYTHONPATH`` would be). Standard library only, and nothing imported before the
path is set.
"""

from __future__ import annotations

import os
import sys

USAGE = "usage: launch.py [--path DIR]... [--chdir DIR] -m MODULE [ARG...]"


def parse(argv: list[str]) -> tuple[list[str], str | None, str, list[str]]:
    """(search path, folder to move to, module, the module's arguments) from the bootstrap's own arguments."""
    search: list[str] = []
    chdir: str | None = None
    index = 0
    while index < len(argv):
        option = argv[index]
        if option == "-m" and index + 1 < len(argv):
            return search, chdir, argv[index + 1], argv[index + 2 :]
        if option in ("--path", "--chdir") and index + 1 < len(argv):
            if option == "--path":
                search.append(argv[index + 1])
            else:
                chdir = argv[index + 1]
            index += 2
            continue
        raise SystemExit(f"{USAGE}\nunexpected argument: {option!r}")
    raise SystemExit(USAGE)


def isolated_path(current: list[str], search: list[str], own_folder: str) -> list[str]:
    """``search`` (existing directories, each once) followed by ``current`` without the script's own folder or the
    working directory, which Python 3.10 puts there even under ``-I``."""
    head = list(dict.fromkeys(entry for entry in search if entry and os.path.isdir(entry)))
    tail = [
        entry
        for entry in current
        if entry not in head and entry not in ("", ".") and os.path.abspath(entry) != own_folder
    ]
    return head + tail


def main() -> None:
    search, chdir, module, arguments = parse(sys.argv[1:])
    if chdir is not None:
        os.chdir(chdir)
    own_folder = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = isolated_path(sys.path, search, own_folder)
    sys.argv = [module, *arguments]
    import runpy  # only now: the path no longer names the workspace

    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
