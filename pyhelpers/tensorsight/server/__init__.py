"""The TensorSight language server (pygls): silent-bug diagnostics, quick fixes, and the runtime hub.

Started by the extension as ``python -m tensorsight.server`` (stdio). This package's ``__init__`` imports nothing:
``__main__`` must put the bundled libraries on ``sys.path`` before pygls is imported. One module per concern:
``server`` (wiring), ``diagnostics`` and ``code_actions`` (static rules in the editor), ``hub`` (the loopback
listener agents report to), ``runtime_view`` (events -> inlay hints, diagnostics, hovers, code lenses), and
``gpu_monitor`` (pynvml). The custom methods and the hub's wire protocol are documented in README.md here.
"""
