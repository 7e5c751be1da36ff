"""What the debugger shows for tensors, arrays, modules, optimizers and data loaders: the one-line value.

Called by the pydevd plugin (``pydevd_plugins/extensions/pydevd_plugin_tensorsight.py``) for the Variables view,
hover, watch, repl and clipboard, and by users as ``tensorsight.summarize(value)``. It gathers facts from the live
object (``tensor_facts``, ``module_scan``, ``training_objects``) and hands them to the pure grammar in
``core.summary``; the figures come from ``core.stats`` through one cache keyed on each tensor's ``_version``
(``reading``). What an expand lists is ``children``; which values are ours to show is ``kinds``.

What the debugger asks for (``present``, ``children.child_entries``) runs under the request clock of
``display.budget`` (a direct ``summarize`` call outside a request has no time limit): pydevd gives a whole Variables
request 3 s, so a summary that would not fit in what is left of it does less and says so: figures from a strided
sample (``≈``, "sampled"), no figures yet ("figures on expand"), or a module scan that stopped part-way ("scanned
2.1K of 10K tensors for NaN/Inf"); an expanded module lists its first 500 members. Expanding the value is a new
request, with a new budget, and shows the rest.

Good-guest rules kept here: stdlib only at import, torch/numpy used only when the program already imported them
(``kinds.can_present`` looks at ``sys.modules`` and never imports); reads only (``torch.no_grad``, detached views, no
user ``__torch_function__``); never evaluates ``.T``/``.mT``/``.H`` or anything that copies data unasked (those
appear as placeholders with the expression to evaluate); nothing raises out of the public functions.
"""

from __future__ import annotations

import reprlib
from typing import Any

from tensorsight.agent.display.budget import CLOCK
from tensorsight.agent.display.kinds import kind_of
from tensorsight.agent.display.module_scan import module_facts
from tensorsight.agent.display.reading import quiet_torch, short_error, type_name
from tensorsight.agent.display.tensor_facts import array_facts, tensor_facts
from tensorsight.agent.display.training_objects import dataset_facts, loader_facts, optimizer_facts
from tensorsight.agent.runtime.guard import report_once
from tensorsight.core.summary import dataset_line, loader_line, module_line, optimizer_line, tensor_line


def present(value: Any, context: str = "variables") -> str:
    """The value text for a debugger context: variables, hover, watch, repl, or clipboard (line + full repr)."""
    with CLOCK.call():
        return _present(value, context)


def _present(value: Any, context: str) -> str:
    line = summarize(value)
    if context != "clipboard" or kind_of(value) in ("info", "group"):
        return line
    try:
        with quiet_torch():
            full = repr(value)
    except Exception as exc:  # noqa: BLE001
        return f"{line}\n(repr failed: {short_error(exc)})"
    return f"{line}\n{full}"


def summarize(value: Any) -> str:
    """One line that says what a tensor, array, module, optimizer or data loader holds; never raises."""
    kind = kind_of(value)
    try:
        with quiet_torch():
            return _summary_line(value, kind)
    except Exception as exc:  # noqa: BLE001 - the debugger must always get a line
        report_once(f"summarize-{type(value).__name__}", f"could not summarise a {type(value).__name__}: {exc!r}")
        return f"{type_name(value)} (TensorSight could not summarise it: {short_error(exc)})"


def _summary_line(value: Any, kind: str | None) -> str:
    if kind == "info":
        return str.__str__(value)
    if kind in ("group", "record"):
        return str(value.label) if kind == "group" else repr(value)
    if kind == "tensor":
        return tensor_line(tensor_facts(value))
    if kind == "array":
        return tensor_line(array_facts(value))
    if kind == "module":
        return module_line(module_facts(value))
    if kind == "optimizer":
        return optimizer_line(optimizer_facts(value))
    if kind == "loader":
        return loader_line(loader_facts(value))
    if kind == "dataset":
        return dataset_line(dataset_facts(value))
    return _plain(value)


def _plain(value: Any) -> str:
    try:
        return f"{type_name(value)}: {reprlib.repr(value)}"
    except Exception as exc:  # noqa: BLE001
        return f"{type_name(value)} (repr failed: {short_error(exc)})"
