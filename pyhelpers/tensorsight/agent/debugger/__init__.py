"""The only agent code that touches pydevd internals (private API, wrapped and tested).

Runs in the debugged process: ``pause`` (stop in the user's frame, hide our files; used by the sentinel),
``threads`` (hide the agent's threads, tell when pydevd holds a thread; used by the hub client and the rank
watchdog) and ``breakpoints`` (drop line breakpoints on ranks the ``ranks`` option leaves out). Imports no feature.
"""
