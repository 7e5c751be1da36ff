"""debugpy's launcher for a "Debug Training" launch, without the environment report nobody logs (see the package).

debugpy's adapter runs the folder named by the launch request's ``debugLauncherPath`` as ``python FOLDER PORT --
ARG...``, with the launch's interpreter and the adapter's environment (where the bundled debugpy is on
``PYTHONPATH``). This folder's entry removes itself from ``sys.path`` first (nothing is imported from it), quiets the
report and runs debugpy's own launcher entry (``debugpy/launcher/__main__.py``) with the same arguments. The
extension's launch configuration names this folder (``extension/src/debug/launchConfig.ts``).
"""

import os
import runpy
import sys


def _pyhelpers() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


if __name__ == "__main__":
    del sys.path[0]  # this folder
    sys.path.insert(0, _pyhelpers())
    try:
        from tensorsight.debugpy_start import quiet_environment_report
    finally:
        del sys.path[0]
    import debugpy.launcher

    quiet_environment_report()
    runpy.run_path(os.path.join(os.path.dirname(debugpy.launcher.__file__), "__main__.py"), run_name="__main__")
