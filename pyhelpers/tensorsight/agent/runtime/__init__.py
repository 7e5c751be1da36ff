"""Agent plumbing: install, guard, events, options, identity, hub client, import hooks.

Runs in the user's process. Nothing here imports a feature package of the agent; features import this.
"""
