"""pydevd extension entry point: debugpy imports this module when the debugger starts, before user code runs.

It only adapts pydevd's extension API to ``tensorsight.agent``: presentation providers for tensors, arrays, modules,
optimizers and data loaders (``tensorsight.agent.display``: ``kinds``, ``presentation`` and ``children``), and a
lifecycle hook that installs the agent.
Everything here is defensive: an import failure of our package must leave stock debugpy behaviour intact.

Provider order: pydevd asks its providers in the order it loaded them and caches the first taker per type; its own
numpy resolver (``pydevd_plugins/extensions/types``) loads before any plugin on PYTHONPATH. Once the debugger
modules are loaded we move our providers to the front of pydevd's lists (the same list objects pydevd's type
handler holds), so ndarray children are ours. Our providers decline every type they do not handle, so the move
changes nothing for other types.
"""

from _pydevd_bundle.pydevd_extension_api import (  # type: ignore[import-not-found]
    DebuggerEventHandler,
    StrPresentationProvider,
    TypeResolveProvider,
)

__all__ = ["TensorSightEvents", "TensorSightResolver", "TensorSightStr"]


class TensorSightEvents(DebuggerEventHandler):
    """Installs the agent (builtin ``tensorsight``, armed features) once pydevd has loaded its modules."""

    def on_debugger_modules_loaded(self, **kwargs):
        try:
            put_our_providers_first()
        except Exception:  # noqa: BLE001 - never break the debugger
            pass
        try:
            from tensorsight.agent.runtime.install import install

            install("debugger")
        except Exception:  # noqa: BLE001 - never break the debugger
            pass


def put_our_providers_first():
    """Reorder pydevd's provider lists in place so TensorSight is asked before pydevd's own numpy resolver."""
    from _pydevd_bundle.pydevd_extension_utils import extensions_of_type  # type: ignore[import-not-found]

    for api, ours in ((TypeResolveProvider, TensorSightResolver), (StrPresentationProvider, TensorSightStr)):
        providers = extensions_of_type(api)
        mine = [p for p in providers if isinstance(p, ours)]
        if mine and providers[: len(mine)] != mine:
            providers[:] = mine + [p for p in providers if not isinstance(p, ours)]


class TensorSightStr(StrPresentationProvider):
    """One-line summaries (Variables, hover, watch, repl, clipboard)."""

    def can_provide(self, type_object, type_name):
        try:
            from tensorsight.agent.display.kinds import can_present

            return can_present(type_object, type_name)
        except Exception:  # noqa: BLE001
            return False

    def get_str(self, val):
        return self.get_str_in_context(val, "variables")

    def get_str_in_context(self, val, context):
        try:
            from tensorsight.agent.display.presentation import present

            return present(val, context or "variables")
        except Exception:  # noqa: BLE001
            return None


class TensorSightResolver(TypeResolveProvider):
    """Curated children when a tensor, array, module, optimizer or data loader is expanded."""

    def can_provide(self, type_object, type_name):
        try:
            from tensorsight.agent.display.kinds import can_expand

            return can_expand(type_object, type_name)
        except Exception:  # noqa: BLE001
            return False

    def get_contents_debug_adapter_protocol(self, obj, fmt=None):
        """Children in our display order, with evaluate-name suffixes (so "Add to Watch" and "Copy as Expression"
        work); pydevd uses this instead of sorting ``get_dictionary`` by name."""
        try:
            from tensorsight.agent.display.children import child_entries

            return child_entries(obj)
        except Exception:  # noqa: BLE001
            return []

    def get_dictionary(self, var):
        try:
            from tensorsight.agent.display.children import children

            return children(var)
        except Exception:  # noqa: BLE001
            return {}

    def resolve(self, var, attribute):
        try:
            from tensorsight.agent.display.children import resolve_child

            return resolve_child(var, attribute)
        except Exception:  # noqa: BLE001
            return None
