"""The messages that cross between TensorSight's processes, defined once (the package's modules, re-exported here).

One module per direction or concern: ``options`` (the environment and the launch options the editor or the doctor
hands the debuggee, the editor's settings), ``events`` (agent -> server: the hub handshake and every event),
``requests`` (extension <-> server: the custom LSP requests and notifications) and ``wire`` (the codec they share:
``to_wire``, ``parse_payload``, ``json_safe``). Importers keep ``from tensorsight.core import protocol`` and read the
names here, so a name's module may change without touching them.

Three processes talk (see the design's diagram): the editor starts the language server and the debuggee; the agent in
the debuggee reports to the server's runtime hub. Everything they say to each other is declared in this package:
- the environment the editor (or the doctor) hands to the debuggee, and the launch options inside
  ``TENSORSIGHT_OPTIONS`` with their types and defaults (``LAUNCH_OPTIONS``);
- the hub handshake (``hello`` -> ``welcome`` | ``rejected``) and its limits;
- every event type the agent emits as a frozen dataclass (its fields and their types), and where it goes on the
  server (``EVENTS``); the server's own run events (``SERVER_EVENTS``); ``parse_event`` reads a received dict back
  into its dataclass (or a ``ProtocolError``), ``to_wire``/``wire_event`` write one;
- the custom LSP requests and notifications between the extension and the server, with their params and answers
  (``REQUESTS``, ``NOTIFICATIONS``, ``INTERFACES``).

Who imports it: the agent (``agent/runtime/events`` and every feature that sends an event, ``options``,
``hub_client``), the server (``server``, ``hub``, ``runtime_view``, ``run_events``) and the doctor. The TypeScript
side cannot import Python, so ``extension/src/server/protocol.ts`` (with an interface per run event and a
``parseRunEvent`` and a ``parsePayload`` that apply the same rules) is generated from this package by
``scripts/generate_protocol_ts.py``; ``tests/core/test_protocol.py`` checks that the file is current, that every
event the agent's source sends is declared and built from its dataclass, that samples of each parse on both sides,
that the server forwards and handles what is declared, and that no other module keeps a list of event names.
Pure and stdlib only (the agent imports it inside the user's process).
"""

from tensorsight.core.protocol.events import *  # noqa: F403
from tensorsight.core.protocol.options import *  # noqa: F403
from tensorsight.core.protocol.requests import *  # noqa: F403
from tensorsight.core.protocol.wire import *  # noqa: F403
