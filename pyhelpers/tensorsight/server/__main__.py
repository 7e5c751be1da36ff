"""The language server over stdio, as the extension starts it: ``python -I pyhelpers/tensorsight/launch.py --path
BUNDLED_LIBS --path PYHELPERS -m tensorsight.server`` from the ``pyhelpers`` folder.

The bootstrap (``tensorsight/launch.py``) has already put the libraries the extension bundles (pygls, lsprotocol,
cattrs, nvidia-ml-py, ...) first on ``sys.path``, so the bundled versions win over whatever the user's interpreter has,
and nothing of the workspace is on it. ``python -m tensorsight.server`` by hand (a development checkout, another
editor) still works, with ``TENSORSIGHT_BUNDLED_LIBS`` naming such folders, but imports from the working directory
first: start it from a folder you trust.
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
