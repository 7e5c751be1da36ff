"""Test support shared by the test tiers: a DAP client for real debugpy sessions, program markers, paths."""
