"""pydevd extension entry point: debugpy imports this module when the debugger starts, before user code runs.

It only adapts pydevd's extension API to ``tensorsight.agent``: presentation providers for tensors, arrays, modules,
optimizers and data loaders, and a lifecycle hook that installs the agent. Everything here is defensive: an import
failure of our package must leave stock debugpy behaviour intact.
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
            from tensorsight.agent.install import install

            install("debugger")
        except Exception:  # noqa: BLE001 - never break the debugger
            pass


class TensorSightStr(StrPresentationProvider):
    """One-line summaries (Variables, hover, watch, repl, clipboard)."""

    def can_provide(self, type_object, type_name):
        try:
            from tensorsight.agent.presentation import can_present

            return can_present(type_object, type_name)
        except Exception:  # noqa: BLE001
            return False

    def get_str(self, val):
        return self.get_str_in_context(val, "variables")

    def get_str_in_context(self, val, context):
        from tensorsight.agent.presentation import present

        return present(val, context)


class TensorSightResolver(TypeResolveProvider):
    """Curated children when a tensor, array, module, optimizer or data loader is expanded."""

    def can_provide(self, type_object, type_name):
        try:
            from tensorsight.agent.presentation import can_present

            return can_present(type_object, type_name)
        except Exception:  # noqa: BLE001
            return False

    def get_dictionary(self, var):
        from tensorsight.agent.presentation import children

        return children(var)

    def resolve(self, var, attribute):
        from tensorsight.agent.presentation import resolve_child

        return resolve_child(var, attribute)
