"""Test harness: run a script under the agent (as the doctor does) and print every event as one JSON line.

``python agent_events.py '{"observeShapes": true}' script.py`` -> stdout: JSON events (the script's own output goes
to stderr). Used by tests/agent/shapes/test_observers_dap.py to see ``shape`` events, which the doctor does not print.
"""

import contextlib
import json
import runpy
import sys

from tensorsight.agent.runtime import events, install, options


def main() -> None:
    options.set_options(json.loads(sys.argv[1]))
    out = sys.stdout
    events.subscribe(
        lambda e: out.write(json.dumps({k: v for k, v in e.items() if k not in ("pid", "time")}, default=str) + "\n")
    )
    install.install("doctor")
    sys.argv = sys.argv[2:]
    with contextlib.redirect_stdout(sys.stderr):
        try:
            runpy.run_path(sys.argv[0], run_name="__main__")
        finally:
            events.emit("run-finished", error="")


if __name__ == "__main__":
    main()
