"""``python -m tensorsight overfit``: train a script's own model and loss on one small batch; does the loss near 0?

``python -m tensorsight overfit [--json] [--steps N] [--lr LR] [--samples K] script.py [args]``

The script runs in this process until its first ``loss.backward()`` has returned (the optimizer never steps). By
then it has shown everything needed: the model (the first module with parameters called for a training forward
pass), the batch (that call's arguments), and how the loss was computed from them up to ``loss.backward()``, in
whatever shape the script writes it — an ``nn.*Loss`` module, a ``torch.nn.functional`` loss, the user's own loss
function or trainer method, a hand-written expression (``agent.measurement.loss_replay`` records and replays it).
Copies of the modules then train on the first K samples (``agent.measurement.overfit``). ``--json`` prints one JSON
document for the editor's "Overfit One Batch" command. Exit status: 0 when the loss approached zero, 1 when it did
not, 2 when the script could not be run or the check could not be made (``error`` says why, and what it needs).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any

from tensorsight.cli import prelude
from tensorsight.core.l10n import t


@dataclass
class CapturedTraining:
    """What the first training step of the script showed: the recording, or why there is none."""

    recording: Any = None
    error: str = ""
    script_failed: bool = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--steps", type=int, default=200, help="training steps on the small batch (default 200)")
    parser.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate (default 1e-3)")
    parser.add_argument("--samples", type=int, default=8, help="samples taken from the first batch (default 8)")
    prelude.add_script_arguments(parser, "the training script")


def capture_training(path: str, script_args: list[str]) -> CapturedTraining:
    """Run the script until its first ``loss.backward()`` after a training forward has returned (or an
    ``optimizer.step()`` without one), recording the steps from that forward to the backward."""
    from tensorsight.agent.runtime import script_runner, transforming

    transforming.arm("overfit")  # while torch compiles or traces, the recorder's hooks and mode stand aside
    state: dict[str, Any] = {}

    def on_torch(torch: Any) -> None:
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        from tensorsight.agent.measurement.loss_replay import LossRecorder

        def stop() -> None:
            raise script_runner.StopScript

        recorder = state["recorder"] = LossRecorder(torch, after_backward=stop)
        recorder.install()

        def stop_at_a_step_without_backward(optimizer: Any, args: Any, kwargs: Any) -> None:
            if recorder.step_without_backward():
                stop()

        register_optimizer_step_pre_hook(stop_at_a_step_without_backward)

    script_runner.after_torch(on_torch)
    try:
        outcome = script_runner.run_script(path, script_args)
    finally:
        if "recorder" in state:
            state["recorder"].uninstall()
    captured = CapturedTraining(recording=state["recorder"].recording if "recorder" in state else None)
    if outcome.error and not outcome.stopped:
        captured.error, captured.script_failed = t("the script stopped with an error: {0}", outcome.error), True
    elif captured.recording is None:
        captured.error = t("the script never imported torch: there is no model to train")
    return captured


def run(args: argparse.Namespace) -> int:
    refused = prelude.check_script("overfit", args.script)
    if refused is not None:
        return refused
    with prelude.script_output(args.json):
        captured = capture_training(args.script, list(args.args))
    document: dict[str, Any] = {"tool": "overfit", "script": os.path.abspath(args.script)}
    status = 2
    if not captured.error:
        with prelude.script_output(args.json):
            status = _train(captured, args, document)
    if captured.error:
        document["error"] = captured.error
        document["script_failed"] = captured.script_failed
    if args.json:
        prelude.write_json(document)
    else:
        print("\n".join(summary_lines(document)))
    return status


def _train(captured: CapturedTraining, args: argparse.Namespace, document: dict[str, Any]) -> int:
    """Compile the recording, train the copy, fill ``document``; the exit status (``captured.error`` on failure)."""
    from tensorsight.agent.measurement.loss_replay import CannotReplay, compile_program, train_replay
    from tensorsight.agent.runtime.user_libs import loaded_torch

    torch = loaded_torch()
    try:
        program = compile_program(captured.recording, torch)
    except CannotReplay as exc:
        captured.error = str(exc)
        return 2
    except Exception as exc:  # noqa: BLE001 - an unforeseen value in the recorded calls: said, never raised
        captured.error = t("could not read the recorded training step: {0}", f"{type(exc).__name__}: {exc}")
        return 2
    document["model"] = type(program.model).__name__
    if program.model_at is not None:
        document["model_file"], document["model_line"] = program.model_at
    document["loss"] = program.loss_name
    if program.loss_at is not None:
        document["loss_file"], document["loss_line"] = program.loss_at
    try:
        result = train_replay(
            program, torch, captured.recording.reached, steps=args.steps, lr=args.lr, samples=args.samples
        )
    except Exception as exc:  # noqa: BLE001 - CannotReplay, or the copy rejects the small batch: said, not raised
        captured.error = str(exc) if isinstance(exc, (CannotReplay, RuntimeError)) else f"{type(exc).__name__}: {exc}"
        return 2
    document.update(result.to_dict())
    return 0 if result.passed else 1


def _place(document: dict[str, Any], prefix: str) -> str:
    file, line = document.get(f"{prefix}_file"), document.get(f"{prefix}_line")
    return f" ({os.path.relpath(file)}:{line})" if isinstance(file, str) else ""


def summary_lines(document: dict[str, Any]) -> list[str]:
    """The terminal report: one labelled, translated line per fact (never the document's raw keys)."""
    lines = [t("TensorSight overfit one batch: {0}", os.path.relpath(document["script"]))]
    if "model" in document:
        lines.append(t("  Model: {0}", f"{document['model']}{_place(document, 'model')}"))
    if "loss" in document:
        lines.append(t("  Loss: {0}", f"{document['loss']}{_place(document, 'loss')}"))
    if "initial_loss" in document:
        lines.append(
            t(
                "  Loss on the batch: {0} → {1} in {2} steps on {3} samples (Adam, lr {4})",
                f"{document['initial_loss']:.4g}",
                f"{document['final_loss']:.4g}",
                document["steps"],
                document["samples"],
                f"{document['lr']:g}",
            )
        )
        lines.append(t("  Verdict: {0}", document["message"]))
    if document.get("error"):
        lines.append(t("  Could not run the check: {0}", document["error"]))
    return lines
