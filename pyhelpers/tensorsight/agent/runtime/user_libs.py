"""The user's torch and numpy, only when the program has already imported them: the agent's one way to reach them.

Every agent feature that looks at a value (conditions, the sentinel, the toolbox, shape explanations, leakage checks,
tensor walks) asks here instead of importing: ``loaded_torch()`` is ``None`` in a program that never imported torch,
and ``is_tensor(x)`` is then simply False. Reading ``sys.modules`` never triggers an import, so a NumPy-only program
never pays for torch (good-guest rule: stdlib only at import, torch/numpy lazily and only if already in use).

Plumbing: imports nothing from the agent.
"""

from __future__ import annotations

import sys
from typing import Any


def loaded_torch() -> Any:
    """The ``torch`` module if the program imported it, else None."""
    return sys.modules.get("torch")


def loaded_numpy() -> Any:
    """The ``numpy`` module if the program imported it, else None."""
    return sys.modules.get("numpy")


def is_tensor(value: Any) -> bool:
    torch = loaded_torch()
    return torch is not None and isinstance(value, torch.Tensor)


def is_module(value: Any) -> bool:
    torch = loaded_torch()
    return torch is not None and isinstance(value, torch.nn.Module)


def is_optimizer(value: Any) -> bool:
    torch = loaded_torch()
    return torch is not None and isinstance(value, torch.optim.Optimizer)


def is_array(value: Any) -> bool:
    np = loaded_numpy()
    return np is not None and isinstance(value, np.ndarray)


__all__ = ["is_array", "is_module", "is_optimizer", "is_tensor", "loaded_numpy", "loaded_torch"]
