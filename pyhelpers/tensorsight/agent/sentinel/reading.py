"""How the sentinel reads the program without changing it: the user's frame, the tensors in a value, module names.
Our reads are shielded from tensor subclasses by ``runtime.op_calls.shielded``.

Used by every section of the sentinel; imports none of them."""

from __future__ import annotations

import sys
import types
from math import isfinite
from typing import Any

from tensorsight.agent.runtime.op_calls import is_op_call
from tensorsight.agent.runtime.tensor_walk import FOREACH_FROM, is_tensor, suspects
from tensorsight.agent.runtime.user_code import is_user_file

_user_codes: dict[Any, bool] = {}


def user_frame() -> types.FrameType | None:
    """The innermost frame of the user's code on this thread (the line that called the op); cached per code object,
    since it runs for every op outside modules."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        verdict = _user_codes.get(code)
        if verdict is None:
            verdict = is_user_file(code.co_filename) and not is_op_call(code)
            if len(_user_codes) < 100_000:
                _user_codes[code] = verdict
        if verdict:
            return frame
        frame = frame.f_back
    return None


def running_frame(code: types.CodeType) -> types.FrameType | None:
    """The innermost frame on this thread's stack that runs ``code`` (a training loop still running), or None when
    that function has returned."""
    frame = user_frame()
    while frame is not None and frame.f_code is not code:
        frame = frame.f_back
    return frame


def tensors_in(value: Any, shallow: bool = False, depth: int = 0) -> list[Any]:
    """Tensors in an op's or a module's output: a tensor, or tensors in tuples/lists/dicts (model outputs)."""
    if is_tensor(value):
        return [value]
    if depth > (1 if shallow else 4):
        return []
    found: list[Any] = []
    if isinstance(value, dict):
        items: Any = value.values()
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        return found
    for item in items:
        found.extend(tensors_in(item, shallow, depth + 1))
    return found


def mixed_precision() -> bool:
    """Under autocast, Inf gradients are expected now and then: AMP's GradScaler skips those steps (then no
    ``optimizer.step()`` runs, so the gradient check before it stays quiet too)."""
    probe = getattr(sys.modules["torch"]._C, "_is_any_autocast_enabled", None)
    return bool(probe()) if probe is not None else False


def fast_suspects(tensors: list[Any]) -> list[int]:
    """Indices of tensors that may hold NaN/Inf: a finite sum proves a tensor clean; an index may be a false alarm
    when large finite values overflow the sum, so callers confirm with ``exact_counts``.

    This runs at every boundary check and, in observed steps, after every op outside modules, mostly on a few small
    tensors. Plain CPU tensors of float32/float64 take a short path: the sum of a detached alias and its
    ``.item()`` each (on the CPU an ``.item()`` is no device sync, so one per tensor costs less than stacking the
    sums into one). Anything else (other devices, where one sync for all matters, half precision, complex, sparse,
    meta, subclasses, integer dtypes) goes to ``tensor_walk.suspects``. Both reduce detached aliases: no autograd
    history, no write, no version bump.
    """
    if not tensors:
        return []
    if _plain is None:
        _learn_types()
    if len(tensors) >= FOREACH_FROM:  # many tensors: one fused reduction over all of them is cheaper
        return suspects(tensors)
    found: list[int] = []
    for index, tensor in enumerate(tensors):
        kind = type(tensor)
        if (kind is not _plain and kind is not _parameter) or not tensor.is_cpu or tensor.dtype not in _WIDE:
            return suspects(tensors)
        if tensor.layout is not _strided:
            return suspects(tensors)
        if not isfinite(tensor.detach().sum().item()):
            found.append(index)
    return found


_plain: Any = None
_parameter: Any = None
_strided: Any = None
_WIDE: frozenset[Any] = frozenset()


def _learn_types() -> None:
    global _plain, _parameter, _strided, _WIDE
    torch = sys.modules["torch"]
    _parameter, _strided = torch.nn.Parameter, torch.strided
    _WIDE = frozenset((torch.float32, torch.float64))
    _plain = torch.Tensor


def elements(tensors: list[Any]) -> int:
    return int(sum(t.numel() for t in tensors if is_tensor(t)))


def state_tensors(module: Any) -> list[Any]:
    return [*module.parameters(), *module.buffers()]


def module_names(root: Any) -> dict[int, str]:
    return {id(m): name for name, m in root.named_modules()}


def module_label(names: dict[int, str], module: Any) -> str:
    path = names.get(id(module), "")
    kind = type(module).__name__
    return f"{path} ({kind})" if path else kind


def display_module(module: Any) -> str:
    return type(unwrap(module)).__name__


def unwrap(module: Any) -> Any:
    """The module whose forward holds the user's code: DDP/DataParallel wrappers and torch.compile are peeled off
    (replaying a DDP forward would start collectives on one rank only)."""
    for _ in range(4):
        kind = type(module).__name__
        if kind in ("DistributedDataParallel", "DataParallel") and hasattr(module, "module"):
            module = module.module
        elif kind == "OptimizedModule" and hasattr(module, "_orig_mod"):
            module = module._orig_mod
        else:
            break
    return module
