"""Silent broadcasting that changes what an op means: an elementwise loss between prediction and target of different
shapes, a model's prediction against a tensor of another rank in the user's loss or metric code, and an operand made
by a reduction that dropped a dim broadcast back against its source's rank. Intended broadcasts (positional
encodings, masks, biases, scaling, keepdim normalisation) involve neither and stay quiet.

Fed by ``observers`` (each torch call in a window, each model output); the origins of tensors are remembered by weak
reference in ``window_state.state`` for the window only.
"""

from __future__ import annotations

import os
import weakref
from types import FrameType
from typing import Any

from tensorsight.agent.runtime.user_code import is_user_file
from tensorsight.agent.shapes import sample_origin, window_state
from tensorsight.agent.shapes.shape_map import tensors_in
from tensorsight.agent.shapes.window_state import Origin, report
from tensorsight.core import l10n
from tensorsight.core.shapes import elementwise_broadcast_problem, loss_broadcast_problem, reduction_broadcast_problem

ELEMENTWISE = {
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow", "rsub", "atan2",
    "maximum", "minimum", "hypot", "eq", "ne", "lt", "le", "gt", "ge", "subtract", "multiply", "divide",
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
    "__floordiv__", "__rfloordiv__", "__mod__", "__pow__", "__rpow__", "__eq__", "__ne__", "__lt__", "__le__",
    "__gt__", "__ge__",
}  # fmt: skip
LOSSES = {
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "soft_margin_loss", "poisson_nll_loss", "gaussian_nll_loss", "kl_div",
    "hinge_embedding_loss",
}  # fmt: skip
# reductions whose ``dim`` is their second positional argument (``norm``'s is its third: handled apart)
_REDUCTIONS = {
    "sum", "mean", "nansum", "nanmean", "prod", "std", "var", "amax", "amin", "argmax", "argmin", "max", "min",
    "median", "nanmedian", "logsumexp", "all", "any", "count_nonzero", "mode", "norm",
}  # fmt: skip
MAX_PROVENANCE = 4096  # live tensors whose origin a window remembers (model outputs, reductions); cleared per window


def check_call(frame: FrameType, name: str, args: Any, kwargs: dict[str, Any]) -> None:
    """A torch call made from the user's ``frame``: report a meaning-changing broadcast of an elementwise op or loss."""
    torch = window_state.state.torch
    assert torch is not None
    if name in ELEMENTWISE:
        operands = [a for a in args[:2] if isinstance(a, torch.Tensor)]
        if len(operands) == 2:
            problem = meaning_changing_broadcast(operands[0], operands[1])
            if problem is not None:
                report_broadcast(frame, name, problem)
    elif name in LOSSES:
        prediction = args[0] if args else kwargs.get("input")
        target = args[1] if len(args) > 1 else kwargs.get("target")
        if isinstance(prediction, torch.Tensor) and isinstance(target, torch.Tensor):
            problem = loss_broadcast_problem(tuple(prediction.shape), tuple(target.shape))
            if problem is not None:
                report_broadcast(frame, name, problem, loss=True)


def _origin(t: Any, create: bool = False) -> Origin | None:
    origin = window_state.state.origins.get(id(t))
    if origin is not None and origin.ref() is not t:
        origin = None  # the id was reused by another tensor
        del window_state.state.origins[id(t)]
    if origin is None and create:
        if len(window_state.state.origins) >= MAX_PROVENANCE:
            _prune_origins()
        try:
            origin = Origin(weakref.ref(t))
        except TypeError:
            return None
        window_state.state.origins[id(t)] = origin
    return origin


def _prune_origins() -> None:
    """Forget the origins of tensors that died; if the window still remembers too many, the oldest quarter."""
    origins = window_state.state.origins
    for key in [key for key, origin in origins.items() if origin.ref() is None]:
        del origins[key]
    if len(origins) >= MAX_PROVENANCE:
        for key in list(origins)[: MAX_PROVENANCE // 4]:
            del origins[key]


def meaning_changing_broadcast(first: Any, second: Any) -> Any:
    """The broadcast of two operands when it changes what the op means, else None.

    Two cases: a side made by a reduction that dropped a dim, broadcast against its source's rank; and, in the user's
    code outside any model forward (loss and metric code), a model's prediction against a tensor of another rank that
    grows the result (``[N, 1] - [N]``). Broadcasts between other tensors are how positional encodings
    (``position * div_term``), masks, biases and attention scaling are written, and are left alone.
    """
    shapes = (tuple(first.shape), tuple(second.shape))
    for index, operand in enumerate((first, second)):
        origin = _origin(operand)
        if origin is not None and origin.reduced is not None:
            source, dims, reduction = origin.reduced
            problem = reduction_broadcast_problem(source, dims, shapes[index], shapes[1 - index], reduction)
            if problem is not None:
                return problem
    if window_state.state.depth == 0 and any((o := _origin(t)) is not None and o.prediction for t in (first, second)):
        return elementwise_broadcast_problem(*shapes)
    return None


def _reduced_dims(name: str, args: Any, kwargs: dict[str, Any]) -> tuple[int, ...] | None:
    dim = kwargs.get("dim")
    if dim is None and name == "norm":
        dim = args[2] if len(args) > 2 else None
    elif dim is None and len(args) > 1:
        dim = args[1]
    if isinstance(dim, int) and not isinstance(dim, bool):
        return (dim,)
    if isinstance(dim, (tuple, list)) and dim and all(isinstance(d, int) and not isinstance(d, bool) for d in dim):
        return tuple(dim)
    return None


def note_origin(name: str, args: Any, kwargs: dict[str, Any], result: Any) -> None:
    """Remember what ``result`` is: the reduction of a tensor that dropped dims, and/or a prediction (a
    batch-preserving op on one in the user's loss or metric code: ``torch.sigmoid(out)``, ``out.argmax(1)``)."""
    torch = window_state.state.torch
    assert torch is not None
    tensor_type = torch.Tensor
    outputs = [result] if isinstance(result, tensor_type) else []
    if not outputs and isinstance(result, tuple):  # ``x.max(1)``: (values, indices)
        outputs = [r for r in result[:2] if isinstance(r, tensor_type)]
    if not outputs:
        return
    inputs = [a for a in args if isinstance(a, tensor_type)]
    if name in _REDUCTIONS and inputs and inputs[0] is args[0]:
        dims = _reduced_dims(name, args, kwargs)
        source = tuple(args[0].shape)
        if dims is not None and source and outputs[0].dim() == len(source) - len(set(d % len(source) for d in dims)):
            for output in outputs:
                origin = _origin(output, create=True)
                if origin is not None:
                    origin.reduced = (source, dims, name)
    if window_state.state.depth == 0 and len(inputs) == 1:
        origin = _origin(inputs[0])
        if origin is not None and origin.prediction:
            for output in outputs:
                if output.dim() >= 1 and inputs[0].dim() >= 1 and output.shape[0] == inputs[0].shape[0]:
                    tagged = _origin(output, create=True)
                    if tagged is not None:
                        tagged.prediction = True


def note_predictions(output: Any) -> None:
    """A model called from the user's code returned ``output``: its tensors are predictions."""
    for t in tensors_in(output, limit=8):
        origin = _origin(t, create=True)
        if origin is not None:
            origin.prediction = True


def passed_in_by_caller(frame: FrameType, first: tuple[int, ...], second: tuple[int, ...]) -> FrameType:
    """The frame to report a broadcast at: the user's caller when both operand shapes are shapes of tensors the
    function received (``def bce(logits, targets)`` called as ``bce(logits, labels.view(-1, 1))``: the call passed
    the mismatch, so its line is the one to fix), else ``frame``."""
    torch = window_state.state.torch
    caller = frame.f_back
    if torch is None or caller is None or not is_user_file(caller.f_code.co_filename):
        return frame
    code = frame.f_code
    names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    received = frame.f_locals
    shapes = {tuple(v.shape) for v in (received.get(n) for n in names) if isinstance(v, torch.Tensor)}
    return caller if first != second and first in shapes and second in shapes else frame


def report_broadcast(frame: FrameType, op: str, problem: Any, loss: bool = False) -> None:
    details: dict[str, Any] = {
        "op": op,
        "shapes": [list(problem.first), list(problem.second)],
        "result": list(problem.result),
    }
    where = passed_in_by_caller(frame, tuple(problem.first), tuple(problem.second))
    name = op.strip("_")
    if where is not frame:  # said at the call that passed the shapes: name the function and line where they meet
        details["inside"] = {"function": frame.f_code.co_name, "line": frame.f_lineno}
        name = l10n.t("{0} inside {1}() at line {2}", name, frame.f_code.co_name, frame.f_lineno)
    message = l10n.t("silent broadcasting in {0}: {1}", name, problem.message)
    # a loss target reshaped by the dataset (``y = ...squeeze()`` in ``__getitem__``): the shape is made wrong there
    reshaped = sample_origin.reshaped_in_dataset(where, 1, "target") if loss else None
    if reshaped is not None:
        details["loss_line"] = where.f_lineno
        message += l10n.t(
            " (the target comes from the dataset, whose __getitem__ reshapes it here; the loss is at {0}:{1})",
            os.path.basename(where.f_code.co_filename),
            where.f_lineno,
        )
    report("shape", where, message, details, at=reshaped)
