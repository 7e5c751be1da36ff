"""The agent: code that runs inside the user's (debugged or doctored) process.

Rules for everything in this package (see the design):
- stdlib only at import time; torch and numpy are imported lazily, and only when the program already uses them;
- never import pygls or anything from ``tensorsight.server``;
- never change program state (no in-place writes, no global RNG draws, no autograd graph, no ``_version`` bumps);
- never let an exception escape into the debugger or the program (wrap entry points with ``guard.never_raise``).
"""
