"""The TensorSight language server (pygls): silent-bug diagnostics, quick fixes, and the runtime hub.

Started by the extension as ``python -m tensorsight.server`` (stdio). This package's ``__init__`` imports nothing:
``__main__`` must put the bundled libraries on ``sys.path`` before pygls is imported. One module per concern:
``server`` (wiring), one per LSP feature (``diagnostics``, ``code_actions``, ``inlay_hints``, ``hover``,
``code_lens``, ``conditions``), ``params`` (custom request params), ``hub`` (the loopback listener agents report
to), ``runtime_view`` (events -> what the features show), ``rank_book`` (a distributed run's ranks), and
``gpu_monitor`` (pynvml). The messages themselves are defined in ``tensorsight.core.protocol``; README.md here
documents them.
"""
