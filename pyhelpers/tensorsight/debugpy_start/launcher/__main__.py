"""debugpy's launcher for a "Debug Training" launch, without the environment report nobody logs (see the package).

debugpy's adapter runs the folder named by the launch request's ``debugLauncherPath`` as ``python FOLDER PORT --
ARG...``, with the launch's interpreter and the adapter's environment (where the bundled debugpy is on
``PYTHONPATH``). This folder's entry removes itself from ``sys.path`` first (nothing is imported from it), quiets the
report, has the program started through ``debugpy_start/debugpy_launcher.py`` (the launcher's ``debuggee.spawn``
gets the command line ``debuggee_command`` makes) and runs debugpy's own launcher entry
(``debugpy/launcher/__main__.py``) with the same arguments. The extension's launch configuration names this folder
(``extension/src/debug/launchConfig.ts``).
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
        from tensorsight.debugpy_start import debuggee_command, quiet_environment_report
    finally:
        del sys.path[0]
    import debugpy
    import debugpy.launcher
    from debugpy.launcher import debuggee

    quiet_environment_report()
    spawn = debuggee.spawn
    debugpy_dir = os.path.dirname(debugpy.__file__)
    start_file = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "debugpy_launcher.py")

    def spawn_through_our_start(process_name, cmdline, *args, **kwargs):
        return spawn(process_name, debuggee_command(cmdline, debugpy_dir, start_file), *args, **kwargs)

    debuggee.spawn = spawn_through_our_start
    runpy.run_path(os.path.join(os.path.dirname(debugpy.launcher.__file__), "__main__.py"), run_name="__main__")
