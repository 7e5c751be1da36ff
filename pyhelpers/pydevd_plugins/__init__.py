"""Namespace shim so debugpy's bundled pydevd finds TensorSight's extension beside its own plugins."""

import pkgutil

__path__ = pkgutil.extend_path(__path__, __name__)
