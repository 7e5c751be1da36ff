"""Observed shapes per source line, device mismatches, silent broadcasting and the shape map.

Runs in the user's process; armed by ``agent.runtime.install``, used by the CLI's shapes command and the toolbox.
"""
