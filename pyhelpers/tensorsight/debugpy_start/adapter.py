"""The debug adapter of a "Debug Training" launch: ``python -m tensorsight.debugpy_start.adapter [ARG...]`` is
``python -m debugpy.adapter [ARG...]`` without the environment report nobody logs (see the package).

Started by the extension's adapter factory (``extension/src/debug/provider.ts``) through ``tensorsight/launch.py``,
with the bundled libraries and ``pyhelpers`` on the path, and by ``benchmarks/bench_debug_run.py`` as the extension
starts it.
"""

from __future__ import annotations

import runpy

from tensorsight.debugpy_start import quiet_environment_report


def main() -> None:
    quiet_environment_report()
    runpy.run_module("debugpy.adapter", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
