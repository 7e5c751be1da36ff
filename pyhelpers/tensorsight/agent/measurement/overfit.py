"""``tensorsight.overfit_one_batch``: the lesson's pro tip — if a model cannot drive the loss to ~0 on 8 samples, the
bug is in the model, the loss or the data, not in the hyper-parameters.

Public API (re-exported by the toolbox) and the engine of ``python -m tensorsight overfit``
(``tensorsight.cli.overfit``). It trains a deep copy of the model — never the user's model, optimizer or loss
state — with a plain Adam update written here rather than ``torch.optim`` (so the run's step counter and optimizer
hooks do not count it), under ``torch.random.fork_rng`` (dropout in the copy draws no number from the program's
RNG streams), and on cloned slices of the batch (an in-place op in the model cannot reach the user's tensors).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tensorsight.agent.measurement.phases import quiet
from tensorsight.agent.runtime.user_libs import loaded_torch
from tensorsight.core.l10n import t

SAMPLES = 8
STEPS = 200
LEARNING_RATE = 1e-3
TARGET_SHARE = 0.05  # "approaches zero": the final loss is under 5% of the initial one ...
TARGET_FLOOR = 1e-3  # ... or simply tiny


@dataclass
class OverfitResult:
    """What happened when a copy of the model trained on one small batch; ``str()`` gives the verdict."""

    passed: bool
    initial_loss: float
    final_loss: float
    best_loss: float
    steps: int
    samples: int
    lr: float
    message: str
    losses: list[float] = field(default_factory=list)

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        stride = max(1, len(self.losses) // 100)
        data["losses"] = self.losses[::stride]
        return data


def _require_torch() -> Any:
    torch = loaded_torch()
    if torch is None:
        raise RuntimeError("overfit_one_batch needs PyTorch: import torch and pass a torch.nn.Module")
    return torch


def take_samples(value: Any, count: int, torch: Any) -> Any:
    """The first ``count`` samples of every tensor in ``value`` (nested tuples/lists/dicts), detached clones."""
    if isinstance(value, torch.Tensor):
        part = value[:count] if value.dim() > 0 else value
        return part.detach().clone()
    if isinstance(value, Mapping):
        return {key: take_samples(item, count, torch) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        items = [take_samples(item, count, torch) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    return value


def _call_form(inputs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """How the inputs are passed to the model: a tensor -> model(x); a tuple/list -> model(*x); a dict -> model(**x)."""
    if isinstance(inputs, Mapping):
        return (), dict(inputs)
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs), {}
    return (inputs,), {}


def overfit_one_batch(
    model: Any,
    loss_fn: Callable[[Any, Any], Any],
    batch: Sequence[Any],
    steps: int = STEPS,
    lr: float = LEARNING_RATE,
    samples: int = SAMPLES,
) -> OverfitResult:
    """Train a copy of ``model`` on the first ``samples`` samples of ``batch`` for ``steps`` steps; report whether
    ``loss_fn(model(inputs), targets)`` approaches zero.

    ``batch`` is ``(inputs, targets)``: inputs a tensor (``model(x)``), a tuple/list (``model(*x)``) or a dict
    (``model(**x)``). The user's model, its gradients, the loss function and the batch are left exactly as they were.
    """
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise ValueError("batch must be (inputs, targets), e.g. the (x, y) a DataLoader yields")
    args, kwargs = _call_form(batch[0])
    return train_copy(model, loss_fn, args, kwargs, batch[1], steps=steps, lr=lr, samples=samples)


def train_copy(
    model: Any,
    loss_fn: Callable[[Any, Any], Any],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    targets: Any,
    steps: int = STEPS,
    lr: float = LEARNING_RATE,
    samples: int = SAMPLES,
) -> OverfitResult:
    """The engine of ``overfit_one_batch``: inputs already split into positional and keyword arguments."""
    torch = _require_torch()
    steps, samples, lr = max(1, int(steps)), max(1, int(samples)), float(lr)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    try:
        trainee = copy.deepcopy(model)
        criterion = copy.deepcopy(loss_fn) if isinstance(loss_fn, torch.nn.Module) else loss_fn
    except Exception as exc:  # say why instead of touching the original
        raise RuntimeError(f"cannot copy the model to train it apart from yours ({type(exc).__name__}: {exc})") from exc
    small_args = take_samples(args, samples, torch)
    small_kwargs = take_samples(dict(kwargs), samples, torch)
    small_targets = take_samples(targets, samples, torch)
    trainee.train()
    params = [p for p in trainee.parameters() if p.requires_grad]

    def loss_of_step() -> Any:
        return criterion(trainee(*small_args, **small_kwargs), small_targets)

    return train_loop(params, loss_of_step, cuda_devices(params), steps=steps, lr=lr, samples=samples)


def train_loop(
    params: list[Any],
    loss_of_step: Callable[[], Any],
    devices: list[int],
    steps: int = STEPS,
    lr: float = LEARNING_RATE,
    samples: int = SAMPLES,
) -> OverfitResult:
    """``steps`` Adam steps of ``params`` on ``loss_of_step()`` (a copy's loss on the small batch), the verdict.

    Runs under ``torch.random.fork_rng`` (of ``devices`` too) and ``quiet()`` (the phase clock looks away)."""
    torch = _require_torch()
    losses: list[float] = []
    with torch.random.fork_rng(devices=devices), quiet(), torch.enable_grad():
        if not params:
            raise ValueError(t("the model has no trainable parameters"))
        adam = _Adam(params, lr, torch)
        for _ in range(steps):
            for param in params:
                param.grad = None
            loss = loss_of_step()
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                raise ValueError(t("loss_fn must return a scalar tensor"))
            loss.backward()
            losses.append(float(loss.detach()))
            if not math.isfinite(losses[-1]):
                break
            adam.step()
    return verdict(losses, steps, samples, lr)


def verdict(losses: Sequence[float], steps: int, samples: int, lr: float) -> OverfitResult:
    """Pass when the final loss is under 5% of the initial one (or below 1e-3); the message says what to check."""
    initial, final = losses[0], losses[-1]
    finite = [v for v in losses if math.isfinite(v)]
    best = min(finite) if finite else math.nan
    passed = math.isfinite(final) and (final <= TARGET_SHARE * initial or final <= TARGET_FLOOR)
    ran = len(losses)
    start, end, lowest = f"{initial:.4g}", f"{final:.4g}", f"{best:.4g}"
    if passed:
        message = t(
            "overfit one batch: OK — the loss went from {0} to {1} in {2} steps on {3} samples: the model, the loss "
            "and the data can learn; if full training does not, look at the learning rate, regularisation and the "
            "data pipeline",
            start,
            end,
            ran,
            samples,
        )
    elif not math.isfinite(final):
        message = t(
            "overfit one batch: FAILED — the loss became {0} after {1} steps (from {2}): the model or loss produces "
            "NaN/Inf even on {3} samples; try a lower lr than {4}, and check log/division/sqrt in the model and loss",
            final,
            ran,
            start,
            samples,
            f"{lr:g}",
        )
    else:
        message = t(
            "overfit one batch: FAILED — the loss only went from {0} to {1} (best {2}) in {3} steps on {4} samples. "
            "A model that cannot memorise {4} samples has a bug: check that the targets match the inputs, that the "
            "loss fits the output (logits vs probabilities, class indices vs one-hot), that nothing detaches the "
            "graph (.detach(), .item(), .data, numpy round-trips), and that no layer is frozen by mistake; or try "
            "more steps / a higher lr than {5}",
            start,
            end,
            lowest,
            ran,
            samples,
            f"{lr:g}",
        )
    return OverfitResult(passed, initial, final, best, ran, samples, lr, message, list(losses))


def cuda_devices(params: list[Any]) -> list[int]:
    """The CUDA devices the parameters live on (their RNG streams are forked too)."""
    return sorted({p.device.index or 0 for p in params if p.device.type == "cuda"})


class _Adam:
    """A plain Adam update (Kingma & Ba), kept here so ``torch.optim``'s global hooks never see our steps."""

    def __init__(self, params: list[Any], lr: float, torch: Any, betas: tuple[float, float] = (0.9, 0.999)) -> None:
        self.params, self.lr, self.torch = params, lr, torch
        self.beta1, self.beta2, self.eps = betas[0], betas[1], 1e-8
        self.moments = [torch.zeros_like(p) for p in params]
        self.squares = [torch.zeros_like(p) for p in params]
        self.count = 0

    def step(self) -> None:
        torch = self.torch
        self.count += 1
        correction1 = 1 - self.beta1**self.count
        correction2 = 1 - self.beta2**self.count
        with torch.no_grad():
            for param, moment, square in zip(self.params, self.moments, self.squares, strict=True):
                if param.grad is None:
                    continue
                grad = param.grad
                moment.mul_(self.beta1).add_(grad, alpha=1 - self.beta1)
                square.mul_(self.beta2).addcmul_(grad, grad, value=1 - self.beta2)
                denominator = (square / correction2).sqrt_().add_(self.eps)
                param.addcdiv_(moment, denominator, value=-self.lr / correction1)
