"""TensorSight: find the silent bugs of PyTorch/NumPy training code, and measure the training loop.

``import tensorsight`` is cheap (stdlib only); each public name loads its module on first use. In a debugged process
the same module is the builtin ``tensorsight`` that breakpoint conditions use, e.g. ``tensorsight.nan(loss)``.

Public names, by concern:
- breakpoint predicates: ``nan``, ``inf``, ``nonfinite``, ``spike``, ``grad_norm``, ``shape_is``, ``wrong_device``,
  ``zero``, ``exploding``, ``changed``, ``grad_missing``, ``step``, ``rank``, ``world_size``, ``on_rank``;
- stop at the first NaN/Inf: ``break_on_nonfinite(True|False)`` and ``last_nonfinite()``;
- the lesson's toolbox: ``summarize``, ``debug_print``, ``Timer``, ``check_shapes``, ``detect_nan``,
  ``check_data_leakage``, ``check_devices``, ``invalid_values``, ``setup_logging``, ``memory_top``,
  ``overfit_one_batch``, ``view_tensor`` (the viewer panel's JSON), ``show`` (its picture in a notebook), and the
  Spanish aliases ``Cronometro``, ``fuga_de_datos``, ``valores_invalidos``;
- notebooks: ``%load_ext tensorsight`` (``load_ipython_extension``) arms the agent in an IPython/Jupyter kernel.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it (loaded on first attribute access)
_LAZY: dict[str, str] = {
    # tensor summaries
    "summarize": "tensorsight.agent.display.presentation",
    # breakpoint predicates
    "nan": "tensorsight.agent.conditions.predicates",
    "inf": "tensorsight.agent.conditions.predicates",
    "nonfinite": "tensorsight.agent.conditions.predicates",
    "spike": "tensorsight.agent.conditions.predicates",
    "grad_norm": "tensorsight.agent.conditions.predicates",
    "shape_is": "tensorsight.agent.conditions.predicates",
    "wrong_device": "tensorsight.agent.conditions.predicates",
    "rank": "tensorsight.agent.conditions.predicates",
    "on_rank": "tensorsight.agent.conditions.predicates",
    "world_size": "tensorsight.agent.conditions.predicates",
    "zero": "tensorsight.agent.conditions.predicates",
    "exploding": "tensorsight.agent.conditions.predicates",
    "changed": "tensorsight.agent.conditions.predicates",
    "grad_missing": "tensorsight.agent.conditions.predicates",
    "step": "tensorsight.agent.conditions.predicates",
    # stop at the first NaN/Inf (the sentinel's runtime switch and its last report)
    "break_on_nonfinite": "tensorsight.agent.sentinel",
    "last_nonfinite": "tensorsight.agent.sentinel",
    # the lesson's toolbox
    "debug_print": "tensorsight.agent.toolbox",
    "check_shapes": "tensorsight.agent.toolbox",
    "detect_nan": "tensorsight.agent.toolbox",
    "check_data_leakage": "tensorsight.agent.toolbox",
    "check_devices": "tensorsight.agent.toolbox",
    "invalid_values": "tensorsight.agent.toolbox",
    "fuga_de_datos": "tensorsight.agent.toolbox",
    "valores_invalidos": "tensorsight.agent.toolbox",
    "Timer": "tensorsight.agent.measurement.timer",
    "Cronometro": "tensorsight.agent.measurement.timer",
    "setup_logging": "tensorsight.agent.measurement.training_log",
    "memory_top": "tensorsight.agent.measurement.memory",
    "overfit_one_batch": "tensorsight.agent.measurement.overfit",
    # View Tensor: the editor's viewer panel evaluates ``tensorsight.view_tensor(expr)`` at a stop
    "view_tensor": "tensorsight.agent.display.viewer",
    # the same pictures in a notebook cell: ``tensorsight.show(x)``
    "show": "tensorsight.agent.display.picture",
    # ``%load_ext tensorsight`` in IPython/Jupyter (IPython looks the name up on this module)
    "load_ipython_extension": "tensorsight.agent.notebook",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'tensorsight' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
