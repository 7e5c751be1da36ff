"""The TensorSight language server (pygls): silent-bug diagnostics, quick fixes, and the runtime hub.

Started by the extension through the isolated bootstrap (``tensorsight/launch.py ... -m tensorsight.server``,
stdio), which puts the bundled libraries first on ``sys.path``; this package's ``__init__`` imports nothing. One
module per concern: ``server`` (wiring), one per LSP feature (``diagnostics``, ``code_actions``, ``inlay_hints``,
``hover``, ``code_lens``, ``conditions``), ``params`` (custom request params), ``hub`` (the loopback listener agents
report to), ``runtime_view`` (events -> what the features show), ``rank_book`` (a distributed run's ranks), and
``gpu_monitor`` (pynvml). The messages themselves are defined in ``tensorsight.core.protocol``; README.md here
documents them.
"""
