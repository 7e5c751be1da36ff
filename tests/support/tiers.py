"""Test tiers read from a test module's imports; tests/conftest.py turns them into pytest markers.

Each test module is put in the tiers of the real components it drives, so a new test file lands in the right tier
without anyone remembering to mark it:

- ``dap``: a real ``python -m debugpy.adapter`` session (tests/support/dap.py, dap_multi.py);
- ``lsp``: a real pygls server over stdio (pytest-lsp, tests/support/lsp.py);
- ``subprocess``: a child Python process (the doctor, a debuggee, a fresh interpreter).

``pytest -m "not dap and not subprocess"`` is the fast inner loop; the e2e tier is the TypeScript suite.
"""

import ast

TIER_IMPORTS = {
    "dap": ("support.dap", "support.dap_multi"),
    "lsp": ("pytest_lsp", "support.lsp"),
    "subprocess": ("subprocess", "support.dap", "support.dap_multi", "pytest_lsp", "support.lsp"),
}


def tiers_of(source: str) -> set[str]:
    """The tiers a test module belongs to, from the modules it imports (module level or inside functions)."""
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {tier for tier, modules in TIER_IMPORTS.items() if imported.intersection(modules)}
