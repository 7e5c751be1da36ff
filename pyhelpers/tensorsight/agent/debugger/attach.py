"""What an editor that attaches to a running process tells the agent: its hub, the session's token and options.

A launch hands the agent its environment (``TENSORSIGHT_HUB``, ``TENSORSIGHT_TOKEN``, ``TENSORSIGHT_OPTIONS``...); a
process that is already running (waiting in ``python -m tensorsight watch``, or started with
``python -m debugpy --listen``) cannot get one, so the extension puts the same names in its attach request under
``protocol.ATTACH_AGENT_KEY``. debugpy hands the request to pydevd in this process; ``arm`` wraps pydevd's handler of
the attach request (``PyDevJsonCommandProcessor.on_attach_request``, private API checked against debugpy 1.8.x's
vendored pydevd) to read that object before pydevd answers, then calls pydevd unchanged. The hub's address and token
thus travel in the debug session only, never in a file or a command line another user could read.

Armed under a debugger (``runtime.install``'s ``DEBUGGER_FEATURES``) and by ``debugger.waiting`` once it started
debugpy's listener. A malformed object is reported once and ignored: the attach itself always goes ahead.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from tensorsight.agent.runtime import options as launch_options
from tensorsight.agent.runtime.guard import report_once
from tensorsight.agent.runtime.patches import Patches
from tensorsight.core import protocol

_patches = Patches("attach")
MAX_VALUE_CHARS = 1 << 16  # an options object longer than this is not read


def arm(origin: str = "debugger") -> None:
    """Wrap pydevd's attach handler once (a no-op when pydevd is not loaded or its API moved)."""
    module = sys.modules.get("_pydevd_bundle.pydevd_process_net_command_json")
    owner = getattr(module, "PyDevJsonCommandProcessor", None)
    if owner is None or getattr(owner, "on_attach_request", None) is None:
        report_once("attach-api", "pydevd's attach handler not found: an attached editor's hub is not used")
        return
    _patches.replace(owner, "on_attach_request", _reading_agent_environment)


def _reading_agent_environment(original: Any) -> Any:
    def on_attach_request(self: Any, py_db: Any, request: Any) -> Any:
        try:
            given = getattr(getattr(request, "arguments", None), "kwargs", {}).get(protocol.ATTACH_AGENT_KEY)
            if given is not None:
                apply(given)
        except Exception as exc:  # noqa: BLE001 - the attach goes ahead without our part
            report_once("attach-read", f"the attach request's agent settings were not read ({type(exc).__name__})")
        return original(self, py_db, request)

    return on_attach_request


def apply(given: Any) -> bool:
    """Take the hub, token, options and locale an attached editor gave; True when they were usable."""
    if not isinstance(given, Mapping) or not all(isinstance(v, str) for v in given.values()):
        report_once("attach-shape", f"ignoring {protocol.ATTACH_AGENT_KEY}: expected an object of strings")
        return False
    raw_options = given.get(protocol.ENV_OPTIONS)
    if raw_options and len(raw_options) <= MAX_VALUE_CHARS:
        parsed = launch_options.parse_options(raw_options)
        # what this process was started with stays armed (a watch run's sentinel); the editor's options add to it
        launch_options.set_options({**parsed, **_armed(launch_options.options())})
    locale = given.get(protocol.ENV_LOCALE)
    if locale:
        from tensorsight.core.l10n import set_language

        set_language(locale)
    address, token = given.get(protocol.ENV_HUB), given.get(protocol.ENV_TOKEN)
    if address and token:
        launch_options.set_hub(address, token)
        from tensorsight.agent.runtime import hub_client

        hub_client.arm()
    return True


def _armed(current: Mapping[str, Any]) -> dict[str, Any]:
    """The switches already on in this process (an attach never turns a running check off)."""
    return {key: value for key, value in current.items() if value is True}
