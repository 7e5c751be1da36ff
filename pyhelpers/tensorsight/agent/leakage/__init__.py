"""Train/validation/test leakage checks on the live splits a script builds.

Runs in the user's process; armed by ``agent.runtime.install``.
"""
