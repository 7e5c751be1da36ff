"""``python -m tensorsight overfit``: train a script's own model and loss on one small batch; does the loss near 0?

``python -m tensorsight overfit [--json] [--steps N] [--lr LR] [--samples K] script.py [args]``

The script runs in this process until its first ``optimizer.step()`` (which is stopped before it changes anything).
By then it has shown everything needed: the model (the top-level module with parameters of the first training
forward pass), the batch (that call's arguments), and the loss — an ``nn.*Loss`` module called on the output, or a
``torch.nn.functional`` loss (``cross_entropy``, ``mse_loss``, ...) whose calls are watched in this command only.
A copy of the model then trains on the first K samples (``tensorsight.agent.measurement.overfit``). ``--json`` prints
one JSON
document for the editor's "Overfit One Batch" command. Exit status: 0 when the loss approached zero, 1 when it did
not, 2 when the script could not be run or showed no model/loss.
"""

from __future__ import annotations

import argparse
import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tensorsight.cli import prelude

FUNCTIONAL_LOSSES = (
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
)


@dataclass
class CapturedTraining:
    """What the first training step of the script showed."""

    model: Any = None
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    loss_name: str | None = None
    loss_call: Callable[[Any, Any], Any] | None = None
    target: Any = None
    model_at: tuple[str, int] | None = None
    error: str = ""
    steps_seen: int = 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--steps", type=int, default=200, help="training steps on the small batch (default 200)")
    parser.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate (default 1e-3)")
    parser.add_argument("--samples", type=int, default=8, help="samples taken from the first batch (default 8)")
    prelude.add_script_arguments(parser, "the training script")


def _bind_loss(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """(loss callable of (prediction, target), target) from the recorded call ``function(*args, **kwargs)``."""
    rest_kwargs = dict(kwargs)
    if len(args) >= 2:
        target, rest = args[1], args[2:]
    else:
        target, rest = rest_kwargs.pop("target", None), ()

    def loss(prediction: Any, target_: Any) -> Any:
        return function(prediction, target_, *rest, **rest_kwargs)

    return loss, target


def capture_training(path: str, script_args: list[str]) -> CapturedTraining:
    """Run the script up to its first optimizer step and collect model, batch and loss."""
    from tensorsight.agent.runtime import script_runner

    captured = CapturedTraining()
    state: dict[str, Any] = {}

    def on_torch(torch: Any) -> None:
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        from tensorsight.agent.measurement.phases import PhaseClock

        clock = PhaseClock(torch)
        clock.capture.enabled = True
        clock.install()
        state["clock"] = clock
        functional = torch.nn.functional
        for name in FUNCTIONAL_LOSSES:
            original = getattr(functional, name, None)
            if original is not None:
                setattr(functional, name, _watch_functional(original, clock, state))

        def stop_before_first_step(optimizer: Any, args: Any, kwargs: Any) -> None:
            raise script_runner.StopScript

        register_optimizer_step_pre_hook(stop_before_first_step)

    script_runner.after_torch(on_torch)
    outcome = script_runner.run_script(path, script_args)
    clock = state.get("clock")
    if not outcome.stopped:
        captured.error = outcome.error or "the script ended without calling optimizer.step()"
        return captured
    capture = clock.capture if clock is not None else None
    if capture is None or capture.model is None:
        captured.error = "no training forward pass (a module with parameters, in train mode) before optimizer.step()"
        return captured
    captured.model, captured.args, captured.kwargs = capture.model, capture.model_args, capture.model_kwargs
    captured.model_at = clock.model_at if clock is not None else None
    if capture.loss_module is not None:
        captured.loss_name = type(capture.loss_module).__name__
        captured.loss_call, captured.target = _bind_loss(capture.loss_module, capture.loss_args, capture.loss_kwargs)
    elif "functional" in state:
        function, args, kwargs = state["functional"]
        captured.loss_name = f"torch.nn.functional.{function.__name__}"
        captured.loss_call, captured.target = _bind_loss(function, args, kwargs)
    else:
        captured.error = (
            "the loss is computed inline (not by an nn.*Loss module or a torch.nn.functional loss): call "
            "tensorsight.overfit_one_batch(model, loss_fn, (inputs, targets)) in your code instead"
        )
    return captured


def _watch_functional(original: Callable[..., Any], clock: Any, state: dict[str, Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def watched(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        # depth 0: called by the script itself (nn.*Loss modules call these from inside their forward)
        if clock._depth == 0 and clock.capture.model is not None and "functional" not in state:
            state["functional"] = (original, args, kwargs)
        return result

    return watched


def run(args: argparse.Namespace) -> int:
    refused = prelude.check_script("overfit", args.script)
    if refused is not None:
        return refused
    from tensorsight.agent.measurement.overfit import train_copy

    with prelude.script_output(args.json):
        captured = capture_training(args.script, list(args.args))
    document: dict[str, Any] = {"script": os.path.abspath(args.script)}
    if captured.model is not None:
        document["model"] = type(captured.model).__name__
    if captured.model_at is not None:
        document["model_file"], document["model_line"] = captured.model_at
    if captured.loss_name:
        document["loss"] = captured.loss_name
    status = 2
    if not captured.error and captured.loss_call is not None:
        try:
            with prelude.script_output(args.json):
                result = train_copy(
                    captured.model,
                    captured.loss_call,
                    captured.args,
                    captured.kwargs,
                    captured.target,
                    steps=args.steps,
                    lr=args.lr,
                    samples=args.samples,
                )
            document.update(result.to_dict())
            status = 0 if result.passed else 1
        except Exception as exc:  # noqa: BLE001 - the user's model/loss may reject the small batch
            captured.error = f"training the copy failed: {type(exc).__name__}: {exc}"
    if captured.error:
        document["error"] = captured.error
    if args.json:
        prelude.write_json(document)
    else:
        where = f" ({os.path.relpath(captured.model_at[0])}:{captured.model_at[1]})" if captured.model_at else ""
        print(f"TensorSight overfit: model {document.get('model', '?')}{where}, loss {document.get('loss', '?')}")
        print(document.get("message") or f"could not run the check: {captured.error}")
    return status
