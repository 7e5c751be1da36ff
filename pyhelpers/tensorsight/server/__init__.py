"""The TensorSight language server (pygls): silent-bug diagnostics, quick fixes, and the runtime hub.

Started by the extension through the isolated bootstrap (``tensorsight/launch.py ... -m tensorsight.server``,
stdio), which puts the bundled libraries first on ``sys.path``; this package's ``__init__`` imports nothing. One
module per concern:
``server`` (wiring), ``diagnostics`` and ``code_actions`` (static rules in the editor), ``hub`` (the loopback
listener agents report to), ``runtime_view`` (events -> inlay hints, diagnostics, hovers, code lenses), and
``gpu_monitor`` (pynvml). The custom methods and the hub's wire protocol are documented in README.md here.
"""
