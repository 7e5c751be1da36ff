"""Namespace shim: pydevd walks this package for `pydevd_plugin_*` modules when the debugger starts."""

import pkgutil

__path__ = pkgutil.extend_path(__path__, __name__)
