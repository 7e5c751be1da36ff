"""Breakpoint predicates behind the ``tensorsight`` builtin (``tensorsight.nan(loss)``...).

Runs in the debugged process; debugpy evaluates conditions that call these on every hit.
"""
