"""The language server over stdio, as the extension starts it: ``python -I pyhelpers/tensorsight/launch.py --path
BUNDLED_LIBS --path PYHELPERS -m tensorsight.server`` from the ``pyhelpers`` folder.

The bootstrap (``tensorsight/launch.py``) has already put the libraries the extension bundles (pygls, lsprotocol,
cattrs, nvidia-ml-py, ...) first on ``sys.path``, so the bundled versions win over whatever the user's interpreter has,
and nothing of the workspace is on it. ``python -m tensorsight.server`` by hand still works in a development checkout
(with the interpreter's own pygls), but imports from the working directory first.
"""

from __future__ import annotations

if __name__ == "__main__":
    from tensorsight.server.server import main

    main()
