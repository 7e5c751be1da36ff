"""Frozen weights that were never trained: parameters an optimizer holds with ``requires_grad=False`` while they still
hold their random initialisation (no ``load_state_dict``, no ``torch.load`` before training, no library model that
may come pretrained). A freeze line copied from a fine-tuning recipe onto a model built from scratch: that part of
the model never learns, and the finding points at the line that froze it.

Called by ``agent.measurement.learning.LearningWatch`` (which records the optimizers, the loads and the models) at
each optimizer's first step (``frozen_at_start``) and at the end of the run (``freeze_line``). Pure reads: module
trees, ``requires_grad`` flags and the user's source through ``linecache``; nothing is written or run.
"""

from __future__ import annotations

import linecache
import re
import sys
from collections.abc import Iterable
from typing import Any

from tensorsight.agent.runtime.user_code import is_user_file

Location = tuple[str, int]

_FREEZES = re.compile(r"\brequires_grad\s*=\s*False\b|\brequires_grad_\(\s*(requires_grad\s*=\s*)?False\s*\)")
CONTEXT_LINES = 3  # lines above a freeze line searched for the frozen module's attribute name (``for p in m.enc...``)
MAX_SOURCE_LINES = 5000


def frozen_at_start(optimizer: Any, models: Iterable[Any], loaded: set[int]) -> dict[int, str]:
    """``{id(param): name}`` of the parameters ``optimizer`` holds with ``requires_grad=False`` that are weights of a
    ``torch.nn`` layer inside a model built from the user's own classes and ``torch.nn`` layers, and that no
    ``load_state_dict`` filled (``loaded``: ids of the parameters of every module loaded so far)."""
    held = {
        id(param): param
        for group in getattr(optimizer, "param_groups", ())
        for param in group.get("params", ())
        if not getattr(param, "requires_grad", True)
    }
    if not held:
        return {}
    found: dict[int, str] = {}
    for model in models:
        prefix = type(model).__name__
        for path, module in model.named_modules():
            if not _own_or_torch(module) or _user_class(module):
                continue  # a user class's own tensors (a fixed positional table) are frozen on purpose
            if not all(_own_or_torch(m) for m in _ancestors(model, path)):
                continue  # inside a library model (torchvision, transformers...): it may come pretrained
            for name, param in module.named_parameters(recurse=False):
                if id(param) in held and id(param) not in loaded:
                    found[id(param)] = f"{prefix}.{path}.{name}" if path else f"{prefix}.{name}"
    return found


def freeze_line(paths: Iterable[str], names: list[str]) -> Location | None:
    """The user line that froze the parameters ``names`` (``Model.encoder.0.weight``): in the files ``paths``, the
    ``requires_grad = False`` / ``requires_grad_(False)`` line that has one of their attribute names (``encoder``) on
    it or just above it; else the only such line; else None."""
    attributes = {part for name in names for part in name.split(".")[1:-1] if not part.isdigit()}
    candidates: list[Location] = []
    named: list[Location] = []
    for path in dict.fromkeys(paths):
        lines = linecache.getlines(path)[:MAX_SOURCE_LINES]
        for number, text in enumerate(lines, start=1):
            code = text.split("#", 1)[0]
            if not _FREEZES.search(code):
                continue
            candidates.append((path, number))
            context = " ".join(line.split("#", 1)[0] for line in lines[max(0, number - 1 - CONTEXT_LINES) : number])
            if any(re.search(rf"\b{re.escape(a)}\b", context) for a in attributes):
                named.append((path, number))
    if named:
        return named[0]
    return candidates[0] if len(candidates) == 1 else None


def _ancestors(model: Any, path: str) -> list[Any]:
    chain = [model]
    current = model
    for part in path.split(".")[:-1] if path else ():
        current = getattr(current, "_modules", {}).get(part)
        if current is None:
            break
        chain.append(current)
    return chain


def _user_class(module: Any) -> bool:
    module_name = getattr(type(module), "__module__", "") or ""
    return not module_name.startswith("torch.") and _own_or_torch(module)


def _own_or_torch(module: Any) -> bool:
    """A ``torch.nn`` class, or a class defined in the user's code (a class defined in ``__main__`` counts)."""
    module_name = getattr(type(module), "__module__", "") or ""
    if module_name.startswith("torch.nn.") or module_name == "__main__":
        return True
    owner = sys.modules.get(module_name)
    source = getattr(owner, "__file__", None) if owner is not None else None
    return bool(source) and is_user_file(str(source))
