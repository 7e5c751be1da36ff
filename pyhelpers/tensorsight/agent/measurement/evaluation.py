"""Evaluation as users write it, seen while the program runs: validation losses written with
``torch.nn.functional``, and models evaluated in training mode.

Armed by ``measurement.pipeline`` (``Measurement.start``) right after the program imports torch, next to the phase
clock it reads from. Two parts:

- **Functional losses.** ``F.cross_entropy``, ``F.mse_loss``, ``F.nll_loss``, ... (``FUNCTIONAL_LOSSES``) are
  replaced by relays (``relay_importlib_bootstrap``) that call the original and hand its result to
  ``PhaseClock.functional_loss_returned``: a loss scoring a validation pass becomes a validation loss, as a loss
  module's does, so overfitting is diagnosed however the validation loss is written. Only the outermost call counts
  (``nn.CrossEntropyLoss`` calls ``F.cross_entropy``: the clock sees it inside the module and leaves it to the
  module). The relays are installed as ``import torch`` completes, so ``from torch.nn.functional import
  cross_entropy`` in the program gets them too; torch's warnings keep pointing at the user's line.
- **Train-mode evaluation.** After each top-level pass of a model (``PhaseClock.model_pass_listeners``) whose
  dropout, batch norm or training-dependent layers are in training mode, called directly by the user's code (not
  by a library such as ``swa_utils.update_bn``), three things are asked:
  - is it not training? It runs under ``no_grad``/``inference_mode``, or its output is never backpropagated: a
    pre-hook on the output's autograd node tells whether a backward reaches it, and a graph freed without that
    never was;
  - is the data evaluation data? Batches of a held-out loader (built from a val/test/... name, or whose batches
    are never backpropagated), or tensors outside any loader that a loss scores (``PhaseClock.loss_listeners``):
    a generator sampling from fixed noise is not evaluation;
  - is the model trained (one of its passes was backpropagated)? Teacher and EMA models, only ever run without
    gradients, are left alone.
  All three make a ``training-logic`` finding at the user's line of the forward call (the innermost user frame: an
  ``evaluate(net)`` helper, a ``Trainer.validate`` method in another module). Models without such layers get
  nothing: training mode changes nothing there.

The hook is the only thing added to the program's objects: it returns None (the gradient is untouched) and lives
and dies with the user's graph. Nothing here reads tensor values, so nothing syncs a device.
"""

from __future__ import annotations

import linecache
import os
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType, ModuleType
from typing import Any

from tensorsight.agent.measurement.phases import summed_terms
from tensorsight.agent.measurement.relay_importlib_bootstrap import Nesting, observing_relay
from tensorsight.agent.runtime import events, steps
from tensorsight.agent.runtime.guard import never_raise
from tensorsight.agent.runtime.patches import Patches
from tensorsight.agent.runtime.user_code import PACKAGE_ROOT, is_user_file
from tensorsight.agent.shapes.shape_map import tensors_in
from tensorsight.core.findings import Finding
from tensorsight.core.l10n import mark, t
from tensorsight.core.phases import LoaderSettings

Location = tuple[str, int]

FUNCTIONAL_LOSSES = (
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss", "gaussian_nll_loss", "soft_margin_loss",
    "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss", "hinge_embedding_loss",
    "cosine_embedding_loss", "margin_ranking_loss", "triplet_margin_loss", "ctc_loss",
)  # fmt: skip
CHECK = "train-mode-evaluation"
MAX_PENDING = 256  # passes whose graph is still alive (outputs kept in a list): the oldest are let go
MAX_LAYERS_LISTED = 6

_EFFECTS = {  # translated where the message is made (l10n.t)
    "dropout": mark("dropout zeroes random activations"),
    "batch norm": mark(
        "batch norm normalises with each batch's own statistics and updates its running statistics from this data"
    ),
    "instance norm": mark("instance norm updates its running statistics from this data"),
    "training-dependent forward": mark("the forward takes its training path (it reads self.training)"),
}
_EVIDENCE = {
    "no_grad": mark("it runs under torch.no_grad()"),
    "inference_mode": mark("it runs under torch.inference_mode()"),
    "never-backpropagated": mark("its output is never backpropagated"),
}
_SKIP, _USER, _OTHER = 0, 1, 2


@dataclass(eq=False)
class _Pass:
    """One top-level forward of a model with training-mode layers, made by the user's code."""

    model: weakref.ReferenceType[Any]
    file: str  # co_filename of the user frame that made the call
    line: int
    step: int
    loader: LoaderSettings | None
    layers: tuple[tuple[str, str], ...]  # (qualified name and class, kind) of the layers in training mode
    backpropagated: bool = False
    scored: bool = False  # a loss was computed after this pass, before the next model pass
    graph: weakref.ReferenceType[Any] | None = None  # our hook on the output's node: dead once the graph is freed

    def reached(self, _grad_outputs: Any) -> None:
        """The pre-hook on the output's autograd node: a backward reached this pass (may run on autograd's
        threads, so it only sets a flag)."""
        self.backpropagated = True


def layer_kind(torch: ModuleType, layer: Any) -> str | None:
    """What makes ``layer`` behave differently in training mode, or None when nothing does."""
    nn = torch.nn
    if isinstance(layer, nn.modules.dropout._DropoutNd):
        return "dropout" if float(getattr(layer, "p", 0.0) or 0.0) > 0.0 else None
    if isinstance(layer, nn.modules.batchnorm._BatchNorm):
        return "batch norm"
    if isinstance(layer, nn.modules.instancenorm._InstanceNorm):
        return "instance norm" if layer.track_running_stats else None
    if isinstance(layer, nn.RNNBase):
        return "dropout" if layer.dropout > 0 and layer.num_layers > 1 else None
    if isinstance(layer, nn.MultiheadAttention):
        return "dropout" if layer.dropout > 0 else None
    cls = type(layer)
    if cls.__module__.split(".", 1)[0] == "torch":
        return None
    code = getattr(getattr(cls, "forward", None), "__code__", None)
    return "training-dependent forward" if code is not None and "training" in code.co_names else None


def training_mode_layers(torch: ModuleType, model: Any) -> list[tuple[str, Any, str]]:
    """``(qualified name, layer, kind)`` of each layer of ``model`` that behaves differently in training mode."""
    found = []
    for name, layer in model.named_modules():
        kind = layer_kind(torch, layer)
        if kind is not None:
            found.append((name or type(model).__name__, layer, kind))
    return found


def held_out_name(loader: LoaderSettings) -> str | None:
    """The validation/test word in the source line that built ``loader`` (``val_loader = DataLoader(val_set)``)."""
    from tensorsight.core.rules.evaluation import EVAL_WORDS
    from tensorsight.core.rules.facts import words

    text = linecache.getline(loader.file, loader.line)
    return next((word for word in words(text) if word in EVAL_WORDS), None)


class EvaluationWatch:
    """The functional-loss relays and the train-mode evaluation check; one per process (see the module docstring)."""

    def __init__(self, torch: ModuleType, clock: Any, adversarial_parameters: Callable[[], set[int]] = set) -> None:
        self._torch = torch
        self._clock = clock
        # ids of the parameters of adversarial optimizer pairs (the pipeline's): a GAN samples from its generator in
        # training mode by design, and its "scores" of those samples are no evaluation of a trained model
        self._adversarial_parameters = adversarial_parameters
        self._nesting = Nesting()
        # (function name, args, kwargs, result) of each outermost functional loss call (``measurement.data_checks``)
        self.loss_call_listeners: list[Callable[[str, tuple[Any, ...], dict[str, Any], Any], None]] = []
        self._patches = Patches("loss_relay")
        self._layers: weakref.WeakKeyDictionary[Any, list[tuple[str, Any, str]]] = weakref.WeakKeyDictionary()
        self._trained: weakref.WeakSet[Any] = weakref.WeakSet()
        self._trained_loaders: set[LoaderSettings] = set()
        self._pending: list[_Pass] = []
        self._last_pass: _Pass | None = None
        self._suspects: list[tuple[_Pass, str]] = []
        self._reported: set[tuple[str, int]] = set()
        self._file_kinds: dict[str, int] = {}
        self._module_file = os.path.abspath(torch.nn.modules.module.__file__)
        compiler = getattr(torch, "compiler", None)
        self._compiling = getattr(compiler, "is_compiling", None) or (lambda: False)

    # ----------------------------------------------------------------------------------------------- installation
    def install(self) -> None:
        functional = self._torch.nn.functional
        for name in FUNCTIONAL_LOSSES:
            self._patches.replace(functional, name, self._relay)
        self._clock.model_pass_listeners.append(self._on_model_pass)
        self._clock.loss_listeners.append(self._on_loss)

    def _relay(self, original: Callable[..., Any]) -> Callable[..., Any]:
        name = getattr(original, "__name__", "")
        listeners = self.loss_call_listeners
        heard = self._loss_returned

        def with_arguments(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
            heard(name, args, kwargs, result)
            for listener in list(listeners):
                listener(name, args, kwargs, result)

        return observing_relay(original, None, self._nesting, self._looks_away, with_arguments)

    @never_raise()
    def _loss_returned(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        """An outermost functional loss returned: the clock hears it, with the terms a ``reduction="sum"`` added."""
        prediction = args[0] if args else kwargs.get("input")
        target = args[1] if len(args) > 1 else kwargs.get("target")
        summed = summed_terms(self._torch, name, kwargs.get("reduction"), prediction, target)
        self._clock.functional_loss_returned(result, summed)

    def uninstall(self) -> None:
        """Put every original back (the benchmark compares armed and unarmed steps in one process)."""
        self._patches.restore()
        for listeners, listener in (
            (self._clock.model_pass_listeners, self._on_model_pass),
            (self._clock.loss_listeners, self._on_loss),
        ):
            if listener in listeners:
                listeners.remove(listener)

    def _looks_away(self) -> bool:
        return not self._clock.observes_this_thread() or bool(self._compiling())

    # ------------------------------------------------------------------------------------------------ model passes
    @never_raise()
    def _on_model_pass(self, model: Any, output: Any, loader: LoaderSettings | None) -> None:
        self._settle()
        if self._suspects:
            self._report(final=False)
        self._last_pass = self._watch(model, output, loader) if model.training else None

    @never_raise()
    def _on_loss(self) -> None:
        if self._last_pass is not None:
            self._last_pass.scored = True

    def _watch(self, model: Any, output: Any, loader: LoaderSettings | None) -> _Pass | None:
        layers = self._layers.get(model)
        if layers is None:
            layers = self._layers[model] = training_mode_layers(self._torch, model)
        active = tuple((f"{name} ({type(layer).__name__})", kind) for name, layer, kind in layers if layer.training)
        if not active:
            return None
        caller = self._direct_caller()
        if caller is None:
            return None  # a library made this call (swa_utils.update_bn, a framework's loop): its business
        record = _Pass(weakref.ref(model), caller[0], caller[1], steps.current_step(), loader, active)
        torch = self._torch
        if not torch.is_grad_enabled():
            self._suspect(record, "inference_mode" if torch.is_inference_mode_enabled() else "no_grad")
            return record
        node = next((t.grad_fn for t in tensors_in(output) if t.grad_fn is not None), None)
        if node is None:
            return None  # nothing in the output can be backpropagated (a frozen model): no evidence either way
        hook = record.reached
        node.register_prehook(hook)
        record.graph = weakref.ref(hook)
        self._pending.append(record)
        if len(self._pending) > MAX_PENDING:
            del self._pending[0]
        return record

    def _direct_caller(self) -> tuple[str, int] | None:
        """The user frame that called the model, or None when the call came from library code."""
        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            name = frame.f_code.co_filename
            kind = self._file_kinds.get(name)
            if kind is None:
                full = os.path.abspath(name) if name and not name.startswith("<") else name
                if full == self._module_file or full.startswith(PACKAGE_ROOT + os.sep):
                    kind = _SKIP  # torch's Module.__call__ machinery and our own hooks
                else:
                    kind = _USER if is_user_file(name) else _OTHER
                self._file_kinds[name] = kind
            if kind == _USER:
                return name, frame.f_lineno
            if kind == _OTHER:
                return None
            frame = frame.f_back
        return None

    def _settle(self, final: bool = False) -> None:
        """Sort the passes watched so far: backpropagated (the model trains), freed unreached (evaluation), open."""
        still_open = []
        for record in self._pending:
            if record.backpropagated:
                model = record.model()
                if model is not None:
                    self._trained.add(model)
                if record.loader is not None:
                    self._trained_loaders.add(record.loader)
            elif final or record.graph is None or record.graph() is None:
                self._suspect(record, "never-backpropagated")
            else:
                still_open.append(record)
        self._pending = still_open

    def _suspect(self, record: _Pass, evidence: str) -> None:
        where = (record.file, record.line)
        if where in self._reported or any((s.file, s.line) == where for s, _ in self._suspects):
            return
        self._suspects.append((record, evidence))

    def _report(self, final: bool) -> None:
        """Report the suspects that are evaluation of a trained model; keep those whose model may train later."""
        waiting = []
        for record, evidence in self._suspects:
            model = record.model()
            if model is None:
                continue
            if model not in self._trained:
                if not final:
                    waiting.append((record, evidence))  # a teacher, an EMA copy, or its training comes later
                continue
            held_out = self._held_out(record)
            if held_out is not None and self._adversarial(model):
                continue
            if held_out is not None:
                self._reported.add((record.file, record.line))
                events.emit_finding(self._finding(record, evidence, type(model).__name__, held_out))
        self._suspects = waiting

    def _adversarial(self, model: Any) -> bool:
        adversarial = self._adversarial_parameters()
        return bool(adversarial) and any(id(p) in adversarial for p in model.parameters())

    def _held_out(self, record: _Pass) -> dict[str, Any] | None:
        """Why the pass's data is evaluation data, or None: batches of a validation/test loader (by its name, or
        because none of its batches is ever backpropagated), or tensors outside any loader scored by a loss (a
        generator sampling from fixed noise is neither)."""
        loader = record.loader
        if loader is None:
            return {"data": "tensors scored by a loss"} if record.scored else None
        named = held_out_name(loader)
        if named is None and loader in self._trained_loaders:
            return None
        why = f"named {named!r}" if named is not None else "its batches are never backpropagated"
        return {"data": "a held-out loader", "file": loader.file, "line": loader.line, "held_out": why}

    def _finding(self, record: _Pass, evidence: str, model_class: str, held_out: dict[str, Any]) -> Finding:
        kinds = list(dict.fromkeys(kind for _, kind in record.layers))
        names = [name for name, _ in record.layers]
        shown = ", ".join(names[:MAX_LAYERS_LISTED]) + (
            t(" and {0} more", len(names) - MAX_LAYERS_LISTED) if len(names) > MAX_LAYERS_LISTED else ""
        )
        if held_out.get("file") is not None:
            data = t("batches of the loader built at {0}", f"{os.path.basename(held_out['file'])}:{held_out['line']}")
        else:
            data = t("tensors scored by a loss")
        still = (
            t("{0} is still in training mode", shown) if len(names) == 1 else t("{0} are still in training mode", shown)
        )
        message = t(
            "{model} is evaluated in training mode here ({evidence}, on {data}): {still}, so {effects}"
            ": the evaluation does not measure the model as it will be used. Call model.eval() before evaluating "
            "and model.train() after",
            model=model_class,
            evidence=t(_EVIDENCE[evidence]),
            data=data,
            still=still,
            effects="; ".join(t(_EFFECTS[k]) for k in kinds),
        )
        details: dict[str, Any] = {
            "check": CHECK,
            "module": model_class,
            "layers": names,
            "behaviours": kinds,
            "evidence": evidence,
            "held_out": held_out,
        }
        path = os.path.abspath(record.file)
        return Finding("training-logic", "warning", message, path, record.line, step=record.step, details=details)

    # -------------------------------------------------------------------------------------------------- end of run
    @never_raise()
    def finish(self, failed: bool = False) -> None:
        """End of run: passes still open count as never backpropagated, unless the run ended with an error (the
        step it was in never reached its backward)."""
        failed = failed or getattr(sys, "last_value", None) is not None
        self._settle(final=not failed)
        self._report(final=True)
