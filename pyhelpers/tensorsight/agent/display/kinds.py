"""Which of our kinds a value is (tensor, array, module, optimizer, loader, dataset, or one of our own rows), decided
from its type without importing anything.

Called by the pydevd plugin (``can_present``, ``can_expand``: pydevd caches the answer per type) and by
``presentation`` and ``children`` to pick what to show.
"""

from __future__ import annotations

import sys
from typing import Any

from tensorsight.agent.display.reading import Group, Info


def kind_of_type(type_object: Any) -> str | None:
    """``tensor``, ``array``, ``module``, ``optimizer``, ``loader``, ``dataset``, ``info``, ``group``, ``record`` (our
    own records, e.g. the sentinel's ``(nonfinite)`` entry) or None; imports nothing."""
    if not isinstance(type_object, type):
        return None
    if issubclass(type_object, Info):
        return "info"
    if issubclass(type_object, Group):
        return "group"
    if callable(type_object.__dict__.get("__tensorsight_rows__")):
        return "record"
    torch = sys.modules.get("torch")
    if torch is not None:
        tensor_type = getattr(torch, "Tensor", None)
        if isinstance(tensor_type, type) and issubclass(type_object, tensor_type):
            return "tensor"
        for module_name, class_name, kind in (
            ("torch.nn.modules.module", "Module", "module"),
            ("torch.optim.optimizer", "Optimizer", "optimizer"),
            ("torch.utils.data.dataloader", "DataLoader", "loader"),
            ("torch.utils.data.dataset", "Dataset", "dataset"),
        ):
            cls = getattr(sys.modules.get(module_name), class_name, None)
            if isinstance(cls, type) and issubclass(type_object, cls):
                return kind
    np = sys.modules.get("numpy")
    if np is not None:
        ndarray = getattr(np, "ndarray", None)
        if isinstance(ndarray, type) and issubclass(type_object, ndarray):
            return "array"
    return None


def can_present(type_object: Any, type_name: str = "") -> bool:
    """Whether we give the one-line value of this type (pydevd caches the answer per type)."""
    try:
        return kind_of_type(type_object) is not None
    except Exception:  # noqa: BLE001 - a hostile metaclass must not break the debugger
        return False


def can_expand(type_object: Any, type_name: str = "") -> bool:
    """Whether we give the children of this type: everything we present except plain-text facts, and datasets,
    whose own attributes (pydevd's listing) are what a user expands one for."""
    try:
        return kind_of_type(type_object) not in (None, "info", "dataset")
    except Exception:  # noqa: BLE001
        return False


def kind_of(value: Any) -> str | None:
    try:
        return kind_of_type(type(value))
    except Exception:  # noqa: BLE001
        return None
