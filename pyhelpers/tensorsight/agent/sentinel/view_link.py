"""The first-NaN stop's link to the editor's tensor viewer: which tensor of the record it names, and the line the
stop's reason ends with.

The editor passes the start of the link in the ``viewTensorLink`` launch option (its own URL scheme, the extension's
id and this debug session, e.g. ``vscode://tensorsight.tensorsight/viewTensor?session=…``); the link adds
``tensor=output`` (or ``produced_grads.N`` for a birth in a backward node). VS Code turns the link into a clickable
one in the exception widget's trace (where pydevd repeats the reason) and in the Debug Console, and the extension's
URI handler opens View Tensor on ``tensorsight.last_nonfinite().output`` (the tensors the record already keeps, so
nothing is recomputed). The link carries a token, never an expression: the extension maps the token itself.

``sentinel.records`` calls ``stop_reason`` when it stops the debugger. Reads values only: nothing the program sees.
"""

from __future__ import annotations

import re
from typing import Any

from tensorsight.agent.runtime.guard import report_once
from tensorsight.agent.runtime.options import option
from tensorsight.agent.runtime.tensor_walk import is_tensor
from tensorsight.core.l10n import t

# a URI VS Code's link detector takes whole: a scheme, no white space or quotes, no closing punctuation at its end
_LINK_START = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{2,}://[^\s\"'<>`]{1,400}")
MAX_INDEX = 99  # the extension accepts one or two digits


def tensor_token(record: Any) -> str | None:
    """The record's tensor the link names: the op's output, else the first gradient a backward node produced."""
    if is_tensor(getattr(record, "output", None)):
        return "output"
    for index, value in enumerate(getattr(record, "produced_grads", ()) or ()):
        if index > MAX_INDEX:
            break
        if is_tensor(value):
            return f"produced_grads.{index}"
    return None


def view_link(start: Any, token: str) -> str | None:
    """``start`` (the launch option) with ``tensor=token`` added, or None when ``start`` is not a usable link."""
    if not isinstance(start, str) or not _LINK_START.fullmatch(start):
        if start is not None:
            report_once("view-link", "ignoring the viewTensorLink launch option: not a link (scheme://...)")
        return None
    separator = "&" if "?" in start else "?"
    return f"{start}{separator}tensor={token}"


def link_line(record: Any) -> str | None:
    """The line that opens the record's tensor in the viewer, or None (no editor link, or no tensor to show)."""
    start = option("viewTensorLink")
    if start is None:
        return None
    token = tensor_token(record)
    link = view_link(start, token) if token is not None else None
    return t("View the tensor: {0}", link) if link is not None else None


def stop_reason(record: Any, shown: str) -> str:
    """The stop's reason: the record's message as shown (``shown``, with its step and rank), then the viewer's link on
    a line of its own when there is one."""
    try:
        line = link_line(record)
    except Exception as exc:  # noqa: BLE001 - the stop goes ahead without its link
        report_once("view-link-error", f"the stop's viewer link failed ({type(exc).__name__}: {exc})")
        line = None
    return f"{shown}\n{line}" if line else shown
