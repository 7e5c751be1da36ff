"""The only agent code that touches pydevd internals (private API, wrapped and tested).

Runs in the debugged process; used by the sentinel (stops in the user's frame) and the distributed feature.
"""
