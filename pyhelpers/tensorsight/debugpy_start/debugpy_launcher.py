"""The debugged program's start in a "Debug Training" launch, without the environment report nobody logs.

``python [-X ...] debugpy_launcher.py DEBUGPY_DIR --connect ... PROGRAM`` is ``python [-X ...] DEBUGPY_DIR --connect
... PROGRAM``, debugpy's own command line for the program, with the report quieted first (see the package). Our
launcher (``debugpy_start/launcher``) puts this file in front of that command line. The entry removes its folder from
``sys.path``, imports debugpy from the folder the command names (as debugpy's ``__main__`` does when run as a
folder), quiets the report and runs debugpy's ``__main__.py`` with the same arguments, leaving ``sys.path`` as
debugpy's own start leaves it. The file's name is debugpy's convention for its launchers: pydevd neither traces nor
shows a file whose path ends with ``debugpy_launcher.py``, so no frame of ours appears under the program's stack.
"""

import os
import runpy
import sys


def _pyhelpers() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


if __name__ == "__main__":
    del sys.path[0]  # this folder
    debugpy_dir = sys.argv[1]
    sys.path.insert(0, os.path.dirname(debugpy_dir))
    try:
        import debugpy  # noqa: F401 - from the folder the launcher named, before anything else can import one
    finally:
        del sys.path[0]
    sys.path.insert(0, _pyhelpers())
    try:
        from tensorsight.debugpy_start import quiet_environment_report
    finally:
        del sys.path[0]
    quiet_environment_report()
    sys.argv[:] = sys.argv[1:]
    runpy.run_path(os.path.join(debugpy_dir, "__main__.py"), run_name="__main__")
