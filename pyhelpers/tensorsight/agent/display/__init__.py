"""What the debugger shows: one-line tensor summaries and curated children for pydevd.

Runs in the debugged process; called by the pydevd plugin and the public ``tensorsight.summarize``.
"""
