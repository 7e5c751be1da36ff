"""Run-time evidence about the data a training loop feeds its model: what its classification loss scores, whether its
targets are its inputs, and whether evaluation inputs look like training inputs.

Armed by ``measurement.pipeline`` (``Measurement.start``) next to the phase clock and the evaluation watch, whose
listeners it uses: the functional-loss relays (``EvaluationWatch.loss_call_listeners``: ``nn.CrossEntropyLoss`` calls
``F.cross_entropy``, so loss modules are seen too), the top-level model passes (``PhaseClock.model_input_listeners``)
and the backward calls (``PhaseClock.backward_listeners``). Five checks:

- **Classes scored.** A training ``cross_entropy``/``nll_loss`` (mean reduction) over logits of ``C`` classes (their
  dimension 1, the class dimension), or a ``binary_cross_entropy[_with_logits]`` on 0/1 targets (``C = 2``), whose
  result is the very tensor then backpropagated: the curve diagnosis gets ``classes`` and the loss call's line
  (``TrainingCurves.extra``) and can say "training at chance level: 2.30 ≈ ln 10" (``core.curves``).
- **Targets equal to inputs.** The integer targets of a training ``cross_entropy``/``nll_loss`` equal, token for
  token, the integer inputs of the model pass it scores (a language model whose shift to the next token was
  dropped): a ``training-logic`` finding at the loss call. Checked on the first ``TARGET_CHECKS`` calls only.
- **Targets that copy the inputs in training only.** The float targets of a regression loss (``mse_loss``,
  ``l1_loss``, ``smooth_l1_loss``, ``huber_loss``) are compared, value for value, with the float input of the model
  pass they score, over the first ``COPY_CHECKS`` calls of each split. Equal in every training call checked (at
  least ``COPY_MIN_TRAIN``) while every evaluation call scores other targets is a ``training-logic`` finding: the
  model is trained to reproduce its input and evaluated on something else (a denoising model given
  ``(noisy, noisy)`` pairs). A plain autoencoder, equal in both splits, gets none. Reported where the training
  pairs are made: the dataset argument of the DataLoader that served the training batches (``core.written_at``),
  else that DataLoader, else the training loss call.
- **Targets inside the inputs.** When a training regression loss's targets (a few values per sample) are not the
  input's shape, each target value is looked for at every place of the sample's input: found at the same place of
  every sample, in every one of the first training batches checked (at least ``COPY_MIN_TRAIN``), is a ``leakage``
  finding: the model reads the answer (an input window that includes the step it predicts, a target column left
  among the features). Reported where the inputs are made: the line of the dataset's ``__getitem__`` that wrote
  what it returns first (``core.written_at``), else the training DataLoader's dataset argument.
- **Inputs per split.** Mean and std of the first floating-point tensor a trained model receives, over its first
  ``STAT_BATCHES`` training passes and first ``STAT_BATCHES`` evaluation passes (eval mode or no gradients): an std
  ``NORMALIZATION_STD_RATIO`` times apart, or means ``NORMALIZATION_MEAN_SHIFT`` training stds apart, is a
  ``training-logic`` finding at the first evaluation forward (training inputs standardised, evaluation inputs not).

Good guest: every read is of detached tensors under ``torch.no_grad()`` (new tensors, no in-place write, no
``_version`` bump, no graph, no RNG), bounded to a few batches so the cost is a handful of reductions per run; the
references kept are weak ones, except the model's float input in the first ``COPY_PASSES`` passes of a split, held
from the model call to the loss that scores it (or the next pass). Every listener is guarded so nothing escapes into
the program.
"""

from __future__ import annotations

import linecache
import math
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from tensorsight.agent.measurement.phases import caller_location
from tensorsight.agent.runtime.guard import never_raise
from tensorsight.agent.shapes.sample_origin import getitem_written_at
from tensorsight.core.findings import Finding, place_text
from tensorsight.core.l10n import t
from tensorsight.core.phases import LoaderSettings

Location = tuple[str, int]

MULTICLASS_LOSSES = ("cross_entropy", "nll_loss")
BINARY_LOSSES = ("binary_cross_entropy", "binary_cross_entropy_with_logits")
TARGET_CHECKS = 8  # training loss calls whose targets are compared with the model's inputs
TARGETS_EQUAL_MIN = 3  # that many equal comparisons (and no unequal one) make the finding
BINARY_TARGET_CHECKS = 4  # binary losses whose targets are checked to be 0/1
CLASSIFICATION_SHARE = 0.8  # of the training backwards: the loss backpropagated is the classification loss itself
REGRESSION_LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss")
COPY_CHECKS = 8  # regression loss calls per split whose targets are compared with the model's input
COPY_PASSES = 2 * COPY_CHECKS  # model passes per split whose input is held for that comparison (passes with no loss)
COPY_MIN_TRAIN = 3  # equal training comparisons (and no unequal one) before the training targets count as copies
WITHIN_MIN_BATCH = 8  # samples per batch before a target found inside every input means something
WITHIN_MAX_TARGETS = 16  # target values per sample looked for (a forecast horizon, a few regression outputs)
WITHIN_MAX_COMPARED = 1 << 24  # input values x target values x samples compared per batch
WITHIN_MAX_PLACES = 64  # places kept per batch
STAT_BATCHES = 8  # model passes per split whose inputs are summarised
MIN_STAT_BATCHES = 2
NORMALIZATION_STD_RATIO = 3.0
NORMALIZATION_MEAN_SHIFT = 3.0


@dataclass
class _Moments:
    """Mean and std of what a model received in one split, over its first few passes (float64 sums)."""

    batches: int = 0
    count: int = 0
    total: float = 0.0
    squares: float = 0.0
    at: Location | None = None

    def add(self, mean: float, var: float, count: int) -> None:
        self.batches += 1
        self.count += count
        self.total += mean * count
        self.squares += (var + mean * mean) * count

    @property
    def mean(self) -> float:
        return self.total / self.count

    @property
    def std(self) -> float:
        return math.sqrt(max(0.0, self.squares / self.count - self.mean**2))


@dataclass
class _Copies:
    """One split's regression targets compared with the model's input: how many were equal, how many not, and where
    the first compared loss was called."""

    equal: int = 0
    differ: int = 0
    at: Location | None = None
    passes: int = 0  # model passes of the split seen


@dataclass
class _Within:
    """Training targets looked for among the values of the training inputs (``_compare_within``)."""

    equal: int = 0  # batches where some place of every input held a target column
    differ: int = 0
    places: set[tuple[int, int]] | None = None  # (flat input place, target column) held in every batch so far
    shape: tuple[int, ...] = ()  # one sample's input shape
    at: Location | None = None  # the first compared loss call


@dataclass
class _Classification:
    classes: dict[int, int] = field(default_factory=dict)  # class count -> backwards of a loss over that many
    other: int = 0  # training backwards of anything else
    at: Location | None = None


class DataWatch:
    """The three checks of the module docstring; one per process."""

    def __init__(self, torch: ModuleType, clock: Any, evaluation: Any, emit: Callable[[Finding], None]) -> None:
        self._torch = torch
        self._clock = clock
        self._evaluation = evaluation
        self._emit = emit
        self._classification = _Classification()
        self._pending: tuple[weakref.ReferenceType[Any], int, Location | None] | None = None  # (loss, classes, line)
        self._binary_checked = 0
        self._binary_ok = True
        self._input: weakref.ReferenceType[Any] | None = None  # the integer input of the last training pass
        self._target_checks = 0
        self._targets_equal = 0
        self._targets_differ = False
        self._targets_at: Location | None = None
        self._reported_targets = False
        self._model: weakref.ReferenceType[Any] | None = None
        self._moments = {"train": _Moments(), "val": _Moments()}
        self._float_inputs: dict[str, Any] = {"train": None, "val": None}  # the model's input, until its loss
        self._copies = {"train": _Copies(), "val": _Copies()}
        self._copy_loader: LoaderSettings | None = None  # the loader of the first training batch compared
        self._within = _Within()  # training targets looked for inside the training inputs
        self._within_loader: LoaderSettings | None = None

    def install(self) -> None:
        self._evaluation.loss_call_listeners.append(self._on_loss_call)
        self._clock.model_input_listeners.append(self._on_model_input)
        self._clock.backward_listeners.append(self._on_backward)

    def uninstall(self) -> None:
        for listeners, listener in (
            (self._evaluation.loss_call_listeners, self._on_loss_call),
            (self._clock.model_input_listeners, self._on_model_input),
            (self._clock.backward_listeners, self._on_backward),
        ):
            if listener in listeners:
                listeners.remove(listener)

    # ------------------------------------------------------------------------------------------------ loss calls
    @never_raise()
    def _on_loss_call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        if name in REGRESSION_LOSSES:
            self._compare_copy(args, kwargs)
        if not self._clock.scores_training():
            return
        torch = self._torch
        logits = args[0] if args else kwargs.get("input")
        target = args[1] if len(args) > 1 else kwargs.get("target")
        if not isinstance(logits, torch.Tensor) or not isinstance(target, torch.Tensor):
            return
        if len(args) > 2 or kwargs.get("reduction", "mean") != "mean" or not isinstance(result, torch.Tensor):
            return
        classes = self._classes(name, logits, target)
        if classes is None:
            return
        compares = name in MULTICLASS_LOSSES and not target.is_floating_point() and self._compares_targets()
        # the user line is read (a frame walk) only while something still needs it, not at every step
        where = caller_location(sys._getframe(1)) if compares or self._classification.at is None else None
        self._pending = (weakref.ref(result), classes, where)
        if compares:
            self._compare_targets(target, where)

    def _compare_copy(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Regression targets against the model's input, in the split the loss scores (module docstring)."""
        split = "train" if self._clock.scores_training() else self._clock.pass_split()
        record = self._copies.get(split)
        inputs = self._float_inputs.get(split)
        if record is None or inputs is None:
            return
        target = args[1] if len(args) > 1 else kwargs.get("target")
        torch = self._torch
        if not isinstance(inputs, torch.Tensor) or not isinstance(target, torch.Tensor):
            return
        if not target.is_floating_point() or target.device != inputs.device:
            return
        if target.shape != inputs.shape:
            if split == "train" and self._within.equal + self._within.differ < COPY_CHECKS:
                self._float_inputs[split] = None
                self._compare_within(inputs, target)
            return
        if record.equal + record.differ >= COPY_CHECKS:
            return
        self._float_inputs[split] = None  # compared once, then let go
        if target.numel() < 2:
            return
        with torch.no_grad():
            same = target is inputs or bool(torch.equal(target.detach(), inputs.detach()))
        if same:
            record.equal += 1
        else:
            record.differ += 1
        if record.at is None:
            record.at = caller_location(sys._getframe(2))
            if split == "train":
                self._copy_loader = self._clock.pass_loader()

    def _compare_within(self, inputs: Any, target: Any) -> None:
        """Whether every sample's target (a few values) sits, value for value, at one fixed place of its input: a
        window that includes the value it predicts, a target column left among the features. The places that hold
        each target column in every batch so far are kept; a target column that is constant over the batch is not
        judged."""
        torch = self._torch
        batch = int(target.shape[0]) if target.dim() else 0
        if inputs.dim() < 2 or batch < WITHIN_MIN_BATCH or int(inputs.shape[0]) != batch:
            return
        per_input, per_target = inputs[0].numel(), target[0].numel() if target.dim() > 0 else 1
        if per_target > WITHIN_MAX_TARGETS or per_input * per_target * batch > WITHIN_MAX_COMPARED or not per_input:
            return
        with torch.no_grad():
            flat = inputs.detach().reshape(batch, per_input)
            wanted = target.detach().reshape(batch, per_target).to(flat.dtype)
            varying = wanted.amax(dim=0) > wanted.amin(dim=0)  # [K]
            held = (flat.unsqueeze(2) == wanted.unsqueeze(1)).all(dim=0) & varying  # [D, K]: place d holds column k
            places = {(int(d), int(k)) for d, k in held.nonzero().tolist()[:WITHIN_MAX_PLACES]}
        within = self._within
        within.places = places if within.places is None else within.places & places
        if within.places:
            within.equal += 1
            within.shape = tuple(int(n) for n in inputs.shape[1:])
            if within.at is None:
                within.at = caller_location(sys._getframe(3))
                self._within_loader = self._clock.pass_loader()
        else:
            within.differ += 1

    @never_raise(fallback=())
    def target_in_inputs_findings(self) -> tuple[Finding, ...]:
        """Training targets found, value for value, at a fixed place of every training input checked (see
        ``_compare_within``): the model reads the answer it is asked to predict."""
        within = self._within
        if within.equal < COPY_MIN_TRAIN or within.differ or not within.places or within.at is None:
            return ()
        place, column = min(within.places)
        index = _unravel(place, within.shape)
        message = t(
            "the training targets are inside the model's inputs: target value {column} of every sample is input "
            "[{index}] of that sample, value for value, in {checks} of {checks} training batches checked; the model "
            "reads the answer instead of predicting it (an input window that includes the step it predicts, a target "
            "column left among the features): build the inputs from what comes before the target only",
            column=column,
            index=", ".join(str(i) for i in index),
            checks=within.equal,
        )
        details: dict[str, Any] = {"check": "target-in-inputs", "steps_checked": within.equal, "input_index": index}
        details["loss_line"] = within.at[1]
        at = self._inputs_made_at(within.at)
        return (Finding("leakage", "error", message, *at, details=details),)

    def _inputs_made_at(self, loss_at: Location) -> Location:
        """Where the training inputs are made: the line of the dataset's ``__getitem__`` that wrote the sample's input
        (what it returns first), else the dataset given to the training DataLoader, else that loader, else the loss."""
        loader = self._within_loader
        if loader is None:
            return loss_at
        return getitem_written_at(loader.dataset_getitem, 0) or _dataset_made_at(loader)

    @never_raise(fallback=())
    def copy_target_findings(self) -> tuple[Finding, ...]:
        """Training targets equal to the model's inputs while evaluation targets differ (see the module docstring)."""
        train, val = self._copies["train"], self._copies["val"]
        if train.equal < COPY_MIN_TRAIN or train.differ or not val.differ or val.equal or train.at is None:
            return ()
        message = t(
            "the training targets are the model's own inputs, value for value ({checks} of {checks} training steps "
            "checked), while evaluation scores it against other targets (the loss at {evaluated}): the model learns to "
            "reproduce its input, not what it is evaluated on; pair each training input with its own target, as the "
            "evaluation pairs are (for a denoising model: the noisy input with the clean signal)",
            checks=train.equal,
            evaluated=_place_text(val.at, train.at),
        )
        details: dict[str, Any] = {"check": "targets-copy-inputs", "steps_checked": train.equal}
        details["loss_line"] = train.at[1]
        if val.at is not None:
            details["evaluation"] = {"file": val.at[0], "line": val.at[1]}
        return (Finding("training-logic", "warning", message, *self._pairs_made_at(train.at), details=details),)

    def _pairs_made_at(self, loss_at: Location) -> Location:
        """Where the training pairs are made: the dataset given to the training DataLoader, else that loader, else
        the line that made the loss's target, else the loss call."""
        if self._copy_loader is not None:
            return _dataset_made_at(self._copy_loader)
        written = argument_written_at_line(loss_at, 1, "target")
        return (loss_at[0], written) if written is not None else loss_at

    def _compares_targets(self) -> bool:
        return self._input is not None and self._target_checks < TARGET_CHECKS and not self._reported_targets

    def _classes(self, name: str, logits: Any, target: Any) -> int | None:
        if name in MULTICLASS_LOSSES:
            if logits.dim() == 0:
                return None
            classes = int(logits.shape[1] if logits.dim() >= 2 else logits.shape[0])
            return classes if classes >= 2 else None
        if name in BINARY_LOSSES and target.is_floating_point() and target.shape == logits.shape:
            if self._binary_checked < BINARY_TARGET_CHECKS:
                self._binary_checked += 1
                with self._torch.no_grad():
                    values = target.detach()
                    self._binary_ok &= bool(((values == 0) | (values == 1)).all())
            return 2 if self._binary_ok else None
        return None

    def _compare_targets(self, target: Any, where: Location | None) -> None:
        inputs = self._input() if self._input is not None else None
        if inputs is None or self._target_checks >= TARGET_CHECKS or self._reported_targets:
            return
        if inputs.numel() != target.numel() or inputs.device != target.device or target.numel() < 2:
            return
        self._target_checks += 1
        with self._torch.no_grad():
            same = bool(self._torch.equal(target.detach().reshape(-1), inputs.detach().reshape(-1)))
        if not same:
            self._targets_differ = True
            return
        self._targets_equal += 1
        self._targets_at = self._targets_at or where
        if self._targets_equal >= TARGETS_EQUAL_MIN and not self._targets_differ and self._targets_at is not None:
            self._reported_targets = True
            made = self._made_by_dataset(target, self._clock.pass_loader())
            self._emit(self._targets_finding(inputs, self._targets_at, made))

    def _made_by_dataset(self, target: Any, loader: LoaderSettings | None) -> Location | None:
        """The line of the dataset's ``__getitem__`` that wrote the element of its sample the loss's targets are (by
        their position in the DataLoader's batch), when the targets came from a DataLoader."""
        element = self._clock.batch_element_of(target)
        if element is None or loader is None:
            return None
        return getitem_written_at(loader.dataset_getitem, element)

    def _targets_finding(self, inputs: Any, where: Location, made: Location | None = None) -> Finding:
        # reported where the targets are made, which is where the shift goes, when that is not the loss's line: in
        # the loss's function, else in the dataset's __getitem__ (a model that computes its loss in forward())
        written = argument_written_at_line(where, 1, "target")
        at: Location | None = (where[0], written) if written is not None else made
        if at is None:
            subject = t("the targets of this loss")
        elif at[0] == where[0]:
            subject = t("these targets (the loss at line {0})", where[1])
        else:
            subject = t("these targets (the loss at {0})", place_text(where[0], where[1], at[0]))
        message = t(
            "{subject} are the model's inputs, token for token ({checks} of {checks} training steps "
            "checked, {count} ids each): the model learns to copy its input, so the loss falls towards zero without "
            "learning anything; a language model predicts the next token: targets = tokens[:, 1:] for inputs = "
            "tokens[:, :-1] (the shift was dropped)",
            subject=subject,
            checks=self._targets_equal,
            count=int(inputs.numel()),
        )
        details: dict[str, Any] = {
            "check": "targets-equal-inputs",
            "steps_checked": self._targets_equal,
            "ids": int(inputs.numel()),
        }
        if at is None:
            return Finding("training-logic", "warning", message, *where, details=details)
        details["loss_line"] = where[1]
        if at[0] != where[0]:
            details["loss"] = {"file": where[0], "line": where[1]}
        return Finding("training-logic", "warning", message, *at, details=details)

    @never_raise()
    def _on_backward(self, tensors: Any) -> None:
        pending, self._pending = self._pending, None
        if not isinstance(tensors, self._torch.Tensor) or tensors.numel() != 1:
            return
        record = self._classification
        if pending is not None and pending[0]() is tensors:
            record.classes[pending[1]] = record.classes.get(pending[1], 0) + 1
            record.at = record.at or pending[2]
        else:
            record.other += 1

    def curve_extra(self) -> dict[str, Any]:
        """``TrainingCurves.extra``: ``classes`` and ``classification_at`` when (nearly) every training backward was of
        a classification loss over one class count; ``evaluation_inputs_differ`` when the input statistics did."""
        extra: dict[str, Any] = {"evaluation_inputs_differ": True} if self.normalization_findings() else {}
        record = self._classification
        if len(record.classes) != 1 or not self._binary_ok:
            return extra
        ((classes, backwards),) = record.classes.items()
        if backwards < CLASSIFICATION_SHARE * (backwards + record.other):
            return extra
        extra["classes"] = classes
        if record.at is not None:
            extra["classification_at"] = record.at
        return extra

    # ---------------------------------------------------------------------------------------------- model inputs
    @never_raise()
    def _on_model_input(self, model: Any, args: tuple[Any, ...], split: str) -> None:
        torch = self._torch
        first = next((a for a in args if isinstance(a, torch.Tensor)), None)
        if first is None:
            return
        if split == "train":
            if self._model is None:
                self._model = weakref.ref(model)
            self._input = None if first.is_floating_point() else weakref.ref(first)
        elif self._model is None or self._model() is not model:
            return
        copies = self._copies[split]
        copies.passes += 1
        held = copies.equal + copies.differ < COPY_CHECKS and copies.passes <= COPY_PASSES and first.is_floating_point()
        self._float_inputs[split] = first if held else None  # until the loss that scores this pass, or the next pass
        moments = self._moments[split]
        if moments.batches >= STAT_BATCHES or not first.is_floating_point() or first.dim() < 2 or first.numel() < 2:
            return
        with torch.no_grad():
            var, mean = torch.var_mean(first.detach().float(), correction=0)
            moments.add(float(mean), float(var), int(first.numel()))
        if split == "val" and moments.at is None:
            moments.at = caller_location(sys._getframe(1))

    @never_raise(fallback=())
    def normalization_findings(self) -> tuple[Finding, ...]:
        """Evaluation inputs whose scale or centre is far from the training inputs' (see the module docstring)."""
        train, val = self._moments["train"], self._moments["val"]
        if train.batches < MIN_STAT_BATCHES or val.batches < MIN_STAT_BATCHES or val.at is None:
            return ()
        if not (train.std > 0 and val.std > 0):
            return ()
        ratio = val.std / train.std
        shift = abs(val.mean - train.mean) / train.std
        if 1.0 / NORMALIZATION_STD_RATIO < ratio < NORMALIZATION_STD_RATIO and shift < NORMALIZATION_MEAN_SHIFT:
            return ()
        model = self._model() if self._model is not None else None
        message = t(
            "evaluation inputs are not on the scale of training inputs: in evaluation `{model}` receives mean "
            "{val_mean} and std {val_std}, in training mean {train_mean} and std {train_std} (first {batches} batches "
            "of each; std ratio {ratio}): the evaluation data is not normalised as the training data is; apply the "
            "same transform, with the training statistics, to both (e.g. the same Normalize(mean, std) in both "
            "datasets)",
            model=type(model).__name__ if model is not None else "model",
            val_mean=f"{val.mean:.3g}",
            val_std=f"{val.std:.3g}",
            train_mean=f"{train.mean:.3g}",
            train_std=f"{train.std:.3g}",
            batches=min(train.batches, val.batches),
            ratio=f"{ratio:.3g}",
        )
        details = {
            "check": "input-statistics-per-split",
            "train_mean": train.mean,
            "train_std": train.std,
            "eval_mean": val.mean,
            "eval_std": val.std,
            "std_ratio": ratio,
            "mean_shift_in_train_stds": shift,
        }
        return (Finding("training-logic", "warning", message, *val.at, details=details),)


def _unravel(place: int, shape: tuple[int, ...]) -> list[int]:
    """The index of flat ``place`` in an array of ``shape`` (row-major)."""
    index: list[int] = []
    for size in reversed(shape or (place + 1,)):
        index.append(place % max(size, 1))
        place //= max(size, 1)
    return index[::-1]


def _dataset_made_at(loader: LoaderSettings) -> Location:
    """Where ``loader``'s dataset was made: the line that computed the dataset it was given, else the loader's."""
    line = argument_written_at_line((loader.file, loader.line), 0, "dataset")
    return loader.file, line if line is not None else loader.line


def _place_text(at: Location | None, beside: Location) -> str:
    if at is None:
        return "?"
    return place_text(at[0], at[1], beside[0])


def argument_written_at_line(where: Location, position: int, keyword: str) -> int | None:
    """The line that computed argument ``position`` (or ``keyword=``) of the call at ``where`` (``core.written_at``:
    the loss's target, a DataLoader's dataset, an optimizer's parameters), when it is not the call's own line."""
    from tensorsight.core.written_at import argument_written_at

    source = "".join(linecache.getlines(where[0]))
    line = argument_written_at(source, where[1], position, keyword) if source else None
    return line if line is not None and line != where[1] else None
