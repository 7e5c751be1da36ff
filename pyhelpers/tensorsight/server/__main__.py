"""``python -m tensorsight.server``: the language server over stdio, as the extension starts it.

The extension passes the libraries it bundles (pygls, lsprotocol, cattrs, nvidia-ml-py, ...) in
``TENSORSIGHT_BUNDLED_LIBS`` (``os.pathsep``-separated); they go first on ``sys.path`` before anything imports pygls,
so the bundled versions win over whatever the user's interpreter has.
"""

from __future__ import annotations

import os
import sys

from tensorsight.core.protocol import ENV_BUNDLED_LIBS  # stdlib only: safe before the bundled libraries are in place


def add_bundled_libs(environ: dict[str, str] | None = None) -> list[str]:
    """Insert each existing directory of ``TENSORSIGHT_BUNDLED_LIBS`` at the front of sys.path (in order)."""
    raw = (environ if environ is not None else os.environ).get(ENV_BUNDLED_LIBS, "")
    added = [entry for entry in raw.split(os.pathsep) if entry and os.path.isdir(entry)]
    for entry in reversed(added):
        if entry in sys.path:
            sys.path.remove(entry)
        sys.path.insert(0, entry)
    return added


if __name__ == "__main__":
    add_bundled_libs()
    from tensorsight.server.server import main

    main()
