"""How the script turns its batch into the loss it calls ``backward()`` on, recorded once and replayed on a copy.

Used by ``python -m tensorsight overfit`` (``cli/overfit.py``), which runs the script until that first backward has
returned (``after_backward`` stops it). ``LossRecorder`` watches, on the script's thread, from the first training
forward pass (a module with parameters, in train mode, grad enabled, called outside any other module) to the first
``torch.autograd.backward`` (what ``loss.backward()`` calls): every module called at the top level and every torch
operation run outside a module (a ``TorchFunctionMode``). So the loss may come from an ``nn.*Loss`` module, a
``torch.nn.functional`` loss, the user's own function in another module, a trainer's method or a hand-written
expression (``-(onehot * logits.log_softmax(1)).sum(1).mean()``): what counts is the tensor ``backward()`` received.

``compile_program`` keeps the steps that tensor depends on (plus in-place writes into them) and turns their
arguments into references: the output of an earlier step, or a constant (the batch, the targets, a one-hot table).
``ReplayedLoss`` then re-runs those steps with deep copies of the modules (one copy memo: shared parameters stay
shared, and a parameter the loss reads directly, say an L2 penalty, reads the copy's) on the first ``samples``
samples of every batch-sized constant, detached and cloned for each step. The user's tensors, modules and gradients
are never written. The parameters that train are the copies of those the loss's autograd graph reached (walked when
backward() was called): a frozen layer, or a GAN's other network, stays as it is. What cannot be replayed raises
``CannotReplay`` with a sentence that says which line and what shape of code the command needs.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from tensorsight.agent.measurement.overfit import LEARNING_RATE, SAMPLES, STEPS, OverfitResult, cuda_devices, train_loop
from tensorsight.agent.measurement.phases import caller_frame, caller_location, parameters_reached, quiet
from tensorsight.agent.runtime.untraced_hooks import untraced_hook, untraced_torch_function
from tensorsight.agent.runtime.user_code import is_agent_file
from tensorsight.core.l10n import t

Location = tuple[str, int]
Path = tuple[Any, ...]
MAX_DEPTH = 6  # how deep a module's output (tuples, dicts, dataclasses) is searched for tensors
IN_PLACE_DUNDERS = frozenset(
    ("__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__ipow__", "__imatmul__")
)


class CannotReplay(Exception):
    """The recorded computation cannot be re-run on a copy; ``str()`` says why and what the command needs."""


@dataclass
class Step:
    """One call the script made between its first training forward and ``backward()``."""

    call: Any  # an nn.Module (called at the top level) or a torch function / Tensor method
    is_module: bool
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    output: Any
    where: Location | None
    function_name: str = ""  # the user's function that made the call (``soft_cross_entropy``)
    code: Any = None  # and its code object
    library_at: Location | None = None  # where a library (not torch) made the call for the user's code, if one did


@dataclass
class Recording:
    """What ``LossRecorder`` saw: the steps, the loss tensor given to ``backward()`` and where it was called."""

    steps: list[Step] = field(default_factory=list)
    loss: Any = None
    backward_at: Location | None = None
    started: bool = False
    reached: frozenset[int] | None = None  # ids of the leaf tensors (parameters) the loss's graph reaches
    step_at: Location | None = None  # optimizer.step() reached with no backward() after the model call


class LossRecorder:
    """Records the steps from the first training forward to the first backward (install on the script's thread);
    ``after_backward`` is called once that backward returned (the command stops the script there)."""

    def __init__(self, torch: Any, after_backward: Callable[[], None] | None = None) -> None:
        self.torch = torch
        self.after_backward = after_backward
        self.recording = Recording()
        self._owner = threading.get_ident()
        self._depth = 0
        self._active = False  # between the first training forward's start and backward()
        self._handles: list[Any] = []
        self._mode: Any = None
        self._original_backward: Any = None

    def install(self) -> None:
        from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

        torch = self.torch
        self._handles.append(register_module_forward_pre_hook(untraced_hook(self._forward_pre)))
        forward_post = untraced_hook(self._forward_post)
        self._handles.append(register_module_forward_hook(forward_post, with_kwargs=True, always_call=True))
        self._mode = _recording_mode(torch, self)
        self._mode.__enter__()
        original = self._original_backward = torch.autograd.backward
        recorder = self

        def backward(tensors: Any, *args: Any, **kwargs: Any) -> Any:
            first = recorder._backward_called(tensors)
            result = original(tensors, *args, **kwargs)
            if first and recorder.after_backward is not None:
                recorder.after_backward()
            return result

        torch.autograd.backward = backward

    def uninstall(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._active = False
        if self._original_backward is not None:
            self.torch.autograd.backward = self._original_backward
            self._original_backward = None
        if self._mode is not None:
            try:
                self._mode.__exit__(None, None, None)
            except Exception:  # noqa: BLE001 - the script left the mode stack in another state: nothing to undo
                pass
            self._mode = None

    def step_without_backward(self) -> bool:
        """The script calls ``optimizer.step()``: True (and its line kept) when it trains a model called since the
        recording started without any ``backward()`` (the command stops it there and says what it needs)."""
        if not (self.recording.started and self.recording.loss is None and self._active):
            return False  # a closure optimizer (LBFGS) steps first and runs forward and backward inside
        self.recording.step_at = caller_location(sys._getframe(1))
        self._active = False
        return True

    def _on_thread(self) -> bool:
        return threading.get_ident() == self._owner

    def _forward_pre(self, module: Any, args: Any) -> None:
        if not self._on_thread():
            return
        if self._depth == 0 and not self.recording.started and self._is_training_forward(module):
            self.recording.started = self._active = True
        self._depth += 1

    def _is_training_forward(self, module: Any) -> bool:
        try:
            has_parameters = next(iter(module.parameters()), None) is not None
        except Exception:  # noqa: BLE001 - an odd module is not the model
            return False
        return has_parameters and bool(module.training) and bool(self.torch.is_grad_enabled())

    def _forward_post(self, module: Any, args: Any, *rest: Any) -> None:
        # rest is (kwargs, output), or (output,) when the forward raised
        if not self._on_thread() or self._depth <= 0:
            return
        self._depth -= 1
        if self._depth == 0 and self._active and len(rest) == 2:
            self._add(module, True, tuple(args), dict(rest[0] or {}), rest[1])

    def _function_called(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        if self._active and self._depth == 0 and self._on_thread():
            self._add(func, False, tuple(args), dict(kwargs), result)

    def _add(self, call: Any, is_module: bool, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> None:
        nearest = self._nearest_caller(sys._getframe(2))
        frame = caller_frame(nearest)
        where = None if frame is None else (os.path.abspath(frame.f_code.co_filename), frame.f_lineno)
        name, code = ("", None) if frame is None else (frame.f_code.co_name, frame.f_code)
        library = None if nearest is frame or nearest is None else (nearest.f_code.co_filename, nearest.f_lineno)
        self.recording.steps.append(Step(call, is_module, args, kwargs, output, where, name, code, library))

    def _nearest_caller(self, frame: Any) -> Any:
        """The innermost frame that is neither torch's nor ours: the code that made the call."""
        torch_dir = os.path.dirname(os.path.abspath(self.torch.__file__)) + os.sep
        while frame is not None:
            name = frame.f_code.co_filename
            if not (os.path.abspath(name).startswith(torch_dir) or is_agent_file(name)):
                return frame
            frame = frame.f_back
        return None

    def _backward_called(self, tensors: Any) -> bool:
        """Keep the first loss given to backward() after the model call (True), before its graph is freed."""
        if not (self._active and self._on_thread()) or self.recording.loss is not None:
            return False
        self._active = False
        if isinstance(tensors, (tuple, list)) and len(tensors) == 1:
            tensors = tensors[0]
        self.recording.loss = tensors
        self.recording.backward_at = caller_location(sys._getframe(2))
        try:
            self.recording.reached = parameters_reached(tensors)
        except Exception:  # noqa: BLE001 - without it every trainable parameter of the copies trains
            self.recording.reached = None
        return True


def _recording_mode(torch: Any, recorder: LossRecorder) -> Any:
    """A ``TorchFunctionMode`` that hands every call it sees to the recorder after running it unchanged."""
    from torch.overrides import TorchFunctionMode

    class RecordingMode(TorchFunctionMode):
        @untraced_torch_function  # while torch compiles or traces, the op passes straight on
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            result = func(*args, **kwargs)
            try:
                recorder._function_called(func, args, kwargs, result)
            except Exception:  # noqa: BLE001 - recording must never break the script's call
                pass
            return result

    return RecordingMode()


# ---------------------------------------------------------------------------------------------- compiling the steps


@dataclass(frozen=True)
class Produced:
    """A tensor the replay makes: ``path`` inside the output of step ``step``."""

    step: int
    path: Path


@dataclass(frozen=True)
class Constant:
    """A tensor from before the first forward (the batch, the targets) or made outside any recorded step."""

    tensor: Any


@dataclass
class Program:
    """The steps the loss depends on, with their arguments as templates (``Produced`` / ``Constant`` leaves)."""

    steps: list[Step]
    templates: list[tuple[Any, Any]]  # per step: (args, kwargs) with tensors replaced by references
    loss: Produced
    batch_size: int | None
    model: Any
    model_at: Location | None
    loss_name: str
    loss_at: Location | None


def tensor_leaves(value: Any, torch: Any, path: Path = (), depth: int = 0) -> Iterator[tuple[Path, Any]]:
    """``(path, tensor)`` for every tensor in ``value``: tuples, lists, mappings, dataclasses (a ModelOutput)."""
    if isinstance(value, torch.Tensor):
        yield path, value
        return
    if depth >= MAX_DEPTH:
        return
    if isinstance(value, Mapping):
        for key, item in list(value.items()):
            yield from tensor_leaves(item, torch, (*path, ("key", key)), depth + 1)
    elif isinstance(value, (tuple, list)):
        for index, item in enumerate(value):
            yield from tensor_leaves(item, torch, (*path, ("index", index)), depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            yield from tensor_leaves(getattr(value, item.name, None), torch, (*path, ("attr", item.name)), depth + 1)


def follow(value: Any, path: Path) -> Any:
    """The part of ``value`` at ``path`` (as ``tensor_leaves`` wrote it)."""
    for how, key in path:
        value = getattr(value, key) if how == "attr" else value[key]
    return value


def _template(value: Any, producers: dict[int, Produced], torch: Any, depth: int = 0) -> Any:
    """``value`` with each tensor replaced by where the replay gets it."""
    if isinstance(value, torch.Tensor):
        return producers.get(id(value)) or Constant(value)
    if depth >= MAX_DEPTH:
        return value
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_template(item, producers, torch, depth + 1) for item in value))
    if type(value) in (tuple, list):  # a torch.Size, a structseq: no tensor inside, kept as it is
        return type(value)(_template(item, producers, torch, depth + 1) for item in value)
    if type(value) is dict:
        return {key: _template(item, producers, torch, depth + 1) for key, item in value.items()}
    return value


def _references(template: Any) -> Iterator[Produced]:
    if isinstance(template, Produced):
        yield template
    elif isinstance(template, (tuple, list)):
        for item in template:
            yield from _references(item)
    elif isinstance(template, dict):
        for item in template.values():
            yield from _references(item)


def _writes_in_place(step: Step) -> bool:
    if step.is_module:
        return False
    name = getattr(step.call, "__name__", "")
    return name in IN_PLACE_DUNDERS or (name.endswith("_") and not name.startswith("_"))


def short(where: Location | None) -> str:
    """``train.py:57`` (the file's name and the line) or ``?``."""
    if where is None:
        return "?"
    return f"{where[0].replace(chr(92), '/').rsplit('/', 1)[-1]}:{where[1]}"


def compile_program(recording: Recording, torch: Any) -> Program:
    """The steps ``recording.loss`` depends on, as a program ``ReplayedLoss`` runs; ``CannotReplay`` says why not."""
    steps = recording.steps
    if not recording.started or not steps or not steps[0].is_module:
        raise CannotReplay(
            t(
                "no training forward pass: the script {0} without calling its model as model(inputs) (an nn.Module "
                "with parameters, not model.forward(inputs)) in train mode with gradients enabled",
                t("reached optimizer.step() at {0}", short(recording.step_at))
                if recording.step_at
                else t("ran to its end"),
            )
        )
    first = steps[0]
    if recording.loss is None:
        raise CannotReplay(
            t(
                "no loss.backward() after the model call at {0} (the script {1}): the command trains on the tensor "
                "that backward() is called on, so the step must read loss = ...; loss.backward(); optimizer.step() "
                "(torch.autograd.grad or gradients set by hand are not replayed); or call "
                "tensorsight.overfit_one_batch(model, loss_fn, (inputs, targets)) in your code",
                short(first.where),
                t("reached optimizer.step() at {0}", short(recording.step_at))
                if recording.step_at
                else t("ran to its end"),
            )
        )
    loss = recording.loss
    producers: dict[int, Produced] = {}
    templates: list[tuple[Any, Any]] = []
    for index, step in enumerate(steps):
        templates.append((_template(step.args, producers, torch), _template(step.kwargs, producers, torch)))
        for path, tensor in tensor_leaves(step.output, torch):
            producers[id(tensor)] = Produced(index, path)
    target = producers.get(id(loss)) if isinstance(loss, torch.Tensor) else None
    if target is None or not (loss.numel() == 1 and loss.is_floating_point()):
        raise CannotReplay(
            t(
                "the tensor passed to backward() at {0} is not a scalar computed by torch operations from the "
                "output of the model call at {1} (on the same thread, between that call and backward(); a loss "
                "function compiled with TorchScript or torch.compile runs out of sight): write the step as "
                "loss = some_function(model(inputs), targets); loss.backward(); or call "
                "tensorsight.overfit_one_batch(model, loss_fn, (inputs, targets)) in your code",
                short(recording.backward_at),
                short(first.where),
            )
        )
    needed = _needed_steps(target.step, templates, steps)
    kept = sorted(needed)
    renumber = {old: new for new, old in enumerate(kept)}
    kept_templates = [_renumber(templates[i], renumber) for i in kept]
    batch = next((tensor for _, tensor in tensor_leaves((first.args, first.kwargs), torch)), None)
    loss_step = steps[target.step]
    model = _trained_module([steps[i] for i in kept], recording.reached) or first
    return Program(
        steps=[steps[i] for i in kept],
        templates=kept_templates,
        loss=Produced(renumber[target.step], target.path),
        batch_size=int(batch.shape[0]) if batch is not None and batch.dim() > 0 else None,
        model=model.call,
        model_at=model.where,
        loss_name=_loss_name(loss_step, first),
        loss_at=loss_step.where,
    )


def _trained_module(steps: list[Step], reached: frozenset[int] | None) -> Step | None:
    """The first module call whose parameters the loss reached (a GAN's discriminator step starts with the
    generator's call, whose output it detaches)."""
    for step in steps:
        if step.is_module and reached and any(id(p) in reached for p in step.call.parameters()):
            return step
    return None


def _needed_steps(loss_step: int, templates: list[tuple[Any, Any]], steps: list[Step]) -> set[int]:
    """The loss's step, the steps it reads from, and the in-place writes into any of them before the loss step."""
    needed: set[int] = set()
    pending = [loss_step]
    while True:
        while pending:
            index = pending.pop()
            if index in needed:
                continue
            needed.add(index)
            pending.extend(ref.step for ref in _references(templates[index]))
        for index in range(loss_step):
            if index not in needed and _writes_in_place(steps[index]):
                if any(ref.step in needed for ref in _references(templates[index])):
                    pending.append(index)
        if not pending:
            return needed


def _renumber(template: Any, renumber: dict[int, int]) -> Any:
    if isinstance(template, Produced):
        return Produced(renumber[template.step], template.path)
    if isinstance(template, tuple) and hasattr(template, "_fields"):
        return type(template)(*(_renumber(item, renumber) for item in template))
    if isinstance(template, (tuple, list)):
        return type(template)(_renumber(item, renumber) for item in template)
    if isinstance(template, dict):
        return {key: _renumber(item, renumber) for key, item in template.items()}
    return template


def _loss_name(step: Step, model_step: Step) -> str:
    """``CrossEntropyLoss``, ``torch.nn.functional.cross_entropy``, the user's ``soft_cross_entropy``, or the model's
    own output (a model that computes its loss)."""
    if step.is_module:
        return (
            type(step.call).__name__ if step is not model_step else t("{0} (its own output)", type(step.call).__name__)
        )
    module = getattr(step.call, "__module__", "") or ""
    name = getattr(step.call, "__name__", "") or ""
    if module == "torch.nn.functional" and name:
        return f"torch.nn.functional.{name}"
    if step.library_at is not None:
        return t("computed in {0} (a library, called from {1})", short(step.library_at), step.function_name or "?")
    if not step.function_name or step.function_name.startswith("<"):
        return t("an expression at the top level of the script")
    if step.code is model_step.code:  # written out next to the model call
        return t("an expression in {0}()", step.function_name)
    return f"{step.function_name}()"


# ---------------------------------------------------------------------------------------------------- the replay


class ReplayedLoss:
    """The loss of a program on copies of its modules and on ``samples`` samples (``None``: the whole batch)."""

    def __init__(self, program: Program, torch: Any, samples: int | None, reached: frozenset[int] | None) -> None:
        self.program, self.torch, self.samples = program, torch, samples
        self.memo: dict[int, Any] = {}
        self.modules: dict[int, Any] = {}
        try:
            for step in program.steps:
                if step.is_module and id(step.call) not in self.modules:
                    self.modules[id(step.call)] = copy.deepcopy(step.call, self.memo)
        except Exception as exc:  # say why instead of touching the original
            raise CannotReplay(
                t("cannot copy the model to train it apart from yours ({0})", f"{type(exc).__name__}: {exc}")
            ) from exc
        self.model = self.modules[id(program.model)]
        self.params = self._trained_parameters(reached)

    def _trained_parameters(self, reached: frozenset[int] | None) -> list[Any]:
        """The copies of the parameters the script's loss reached (runtime evidence of what trains: a frozen layer
        or a GAN's other network stays as it is), else every trainable one of the copies."""
        copies: dict[int, Any] = {}
        for original in reached or ():
            copied = self.memo.get(original)
            if isinstance(copied, self.torch.Tensor) and copied.requires_grad:
                copies.setdefault(id(copied), copied)
        if not copies:
            for module in self.modules.values():
                for param in module.parameters():
                    if param.requires_grad:
                        copies.setdefault(id(param), param)
        return list(copies.values())

    def train(self) -> None:
        """The model's copy in train mode (as the script called it); other modules (a frozen encoder in eval mode,
        a loss module) keep the mode the script gave them."""
        self.model.train()

    def __call__(self) -> Any:
        outputs: list[Any] = []
        for step, (args, kwargs) in zip(self.program.steps, self.program.templates, strict=True):
            call: Callable[..., Any] = self.modules[id(step.call)] if step.is_module else step.call
            outputs.append(call(*self._fill(args, outputs), **self._fill(kwargs, outputs)))
        return follow(outputs[self.program.loss.step], self.program.loss.path)

    def _fill(self, template: Any, outputs: list[Any]) -> Any:
        if isinstance(template, Produced):
            return follow(outputs[template.step], template.path)
        if isinstance(template, Constant):
            return self._constant(template.tensor)
        if isinstance(template, tuple) and hasattr(template, "_fields"):
            return type(template)(*(self._fill(item, outputs) for item in template))
        if isinstance(template, (tuple, list)):
            return type(template)(self._fill(item, outputs) for item in template)
        if isinstance(template, dict):
            return {key: self._fill(item, outputs) for key, item in template.items()}
        return template

    def _constant(self, tensor: Any) -> Any:
        copied = self.memo.get(id(tensor))
        if isinstance(copied, self.torch.Tensor):
            return copied  # a parameter or buffer of a copied module
        size = self.program.batch_size
        if self.samples is not None and size is not None and tensor.dim() > 0 and tensor.shape[0] == size:
            tensor = tensor[: self.samples]
        return tensor.detach().clone()


def train_replay(
    program: Program,
    torch: Any,
    reached: frozenset[int] | None = None,
    steps: int = STEPS,
    lr: float = LEARNING_RATE,
    samples: int = SAMPLES,
) -> OverfitResult:
    """Train copies of the program's modules on its loss over the first ``samples`` samples; when the recorded
    computation does not fit fewer samples (a ``view(32, -1)``, a ``torch.arange(batch_size)``), on the whole batch."""
    steps, samples, lr = max(1, int(steps)), max(1, int(samples)), float(lr)
    size = program.batch_size
    replay = ReplayedLoss(program, torch, samples if size is None or samples < size else None, reached)
    try:
        _probe(replay, torch)
    except CannotReplay:
        raise
    except Exception:  # the whole batch is what the script itself computed
        if replay.samples is None:
            raise
        replay = ReplayedLoss(program, torch, None, reached)
        _probe(replay, torch)
    used = replay.samples if replay.samples is not None else (size or samples)
    return train_loop(replay.params, replay, cuda_devices(replay.params), steps=steps, lr=lr, samples=used)


def _probe(replay: ReplayedLoss, torch: Any) -> None:
    """One replay of the loss (RNG forked, clock quiet): it must run and reach the parameters that train."""
    replay.train()
    with torch.random.fork_rng(devices=cuda_devices(replay.params)), quiet(), torch.enable_grad():
        try:
            loss = replay()
        except Exception as exc:
            raise RuntimeError(
                t(
                    "replaying the loss computation (from the model call at {0} to the loss at {1}) on a copy of the "
                    "model failed: {2}",
                    short(replay.program.model_at),
                    short(replay.program.loss_at),
                    f"{type(exc).__name__}: {exc}",
                )
            ) from exc
        if not (isinstance(loss, torch.Tensor) and loss.requires_grad and replay.params):
            raise CannotReplay(
                t(
                    "the loss at {0} does not depend on any trainable parameter: nothing to fit",
                    short(replay.program.loss_at),
                )
            )
