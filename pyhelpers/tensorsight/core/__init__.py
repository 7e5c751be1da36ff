"""Pure functions shared by the agent, the language server and the doctor: stats, summaries, findings, rules.

Nothing in this package does I/O, and nothing imports torch or numpy at module import time.
"""
