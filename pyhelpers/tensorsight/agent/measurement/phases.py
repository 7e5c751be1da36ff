"""The phase clock: where each training step's time goes — data, forward, backward, optimizer, other — and the
training-loop facts the other measurements need (the loss, the model, the user lines of the loop).

Armed by ``tensorsight.agent.measurement.pipeline`` right after the program imports torch. It observes through torch's
global hooks and thin wrappers around torch's own functions, never through the user's objects:

- data: a wrapper around ``_BaseDataLoaderIter.__next__`` (the DataLoader iterator); ``DataLoader.__init__`` and
  ``__iter__`` are wrapped only to remember the user line that built each loader and its settings;
- forward: global module forward pre/post hooks, counting only the top-level call (depth 0), so a model's
  submodules are not double counted; a top-level call in eval mode or under ``no_grad`` is a validation pass, and
  the loss that scores it (a loss module, a ``torch.nn.functional`` loss reported by the relays of
  ``measurement.evaluation``, or the loss a model puts in its own output: ``measurement.frameworks``) a validation
  loss; each model pass is handed to ``model_pass_listeners``;
- backward: a wrapper around ``torch.autograd.backward`` (what ``Tensor.backward`` calls); the tensor it receives
  is the training loss;
- optimizer: global optimizer step pre/post hooks (the post side through the shared step counter);
- other: the rest of the step's wall time, minus the clock's own bookkeeping.

Time is read from ``debugger.holds.program_clock``: it stands still while the debugger holds the training thread, so a
pause at a breakpoint inside the loop (and what the user evaluates meanwhile) inflates no phase of that step.

One step is the time between two ``optimizer.step()`` returns, or between two hand-written parameter updates: after a
``backward()`` with no optimizer step, the parameters' ``_version`` counters and norms are read (one pass, read-only)
and compared again at the next training forward, the next ``backward()`` or the end of the run; a change is a step.
A closure optimizer (``LBFGS``) runs forwards and backwards inside ``step()``: they belong to that one step, whose
loss is the closure's first. With several optimizers, each step's record says which parameters its losses reached
(sampled from the autograd graph over the first steps), so adversarial pairs (a GAN) can be told apart.

On a GPU the device is synchronised at each phase boundary, so a phase's time includes the kernels it launched (only
when the program has initialised CUDA; on CPU nothing is synchronised). Every wrapper calls the original
first-class and re-raises what it raises; the clock's own work is guarded so it can never break the program.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType, ModuleType
from typing import Any, NamedTuple

from tensorsight.agent.debugger.holds import program_clock
from tensorsight.agent.leakage.splits import static_attribute
from tensorsight.agent.measurement import frameworks
from tensorsight.agent.measurement.runqueue import waited_seconds
from tensorsight.agent.runtime import steps
from tensorsight.agent.runtime.guard import never_raise, report_once
from tensorsight.agent.runtime.patches import Patches
from tensorsight.agent.runtime.transforming import skip_frames, transforming
from tensorsight.agent.runtime.untraced_hooks import untraced_hook
from tensorsight.agent.runtime.user_code import is_user_file
from tensorsight.agent.shapes.sample_origin import dataset_getitem
from tensorsight.core.phases import PHASES, LoaderSettings

Location = tuple[str, int]
_After = Callable[[tuple[Any, ...], dict[str, Any], Any], None]  # (args, kwargs, result) of a wrapped call


class _Timing(NamedTuple):
    """How a timed wrapper measures its call: the clock to read and where the seconds go."""

    read: Callable[[], float]
    add: Callable[[float], None]
    looks_away_when_quiet: bool  # inside ``quiet()`` (our own training) the call is not timed


@dataclass
class StepRecord:
    """What the clock saw during one optimizer step."""

    step: int
    seconds: dict[str, float]
    eval_seconds: float
    losses: list[float]
    optimizer: Any
    loop_at: Location | None
    reached: frozenset[int] = frozenset()  # ids of the parameters this step's losses reached (sampled, else empty)
    # seconds of this step the training thread waited for a CPU (``runqueue``): "data" within the training data phase,
    # "step" over the whole step; empty where unknown
    waited: dict[str, float] = field(default_factory=dict)

    @property
    def loss(self) -> float | None:
        """Mean of the losses backpropagated in this step (several with gradient accumulation)."""
        return sum(self.losses) / len(self.losses) if self.losses else None


_user_file_cache: dict[str, bool] = {}
_quiet = 0  # > 0 while TensorSight itself trains something (overfit_one_batch): the clock looks away


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Hide the forward/backward passes run inside this block from the phase clock (our own work, not the run's)."""
    global _quiet
    _quiet += 1
    try:
        yield
    finally:
        _quiet -= 1


def caller_location(frame: FrameType | None) -> Location | None:
    """``(file, line)`` of the innermost user frame from ``frame`` outwards (file checks cached by name)."""
    user = caller_frame(frame)
    return None if user is None else (os.path.abspath(user.f_code.co_filename), user.f_lineno)


def caller_frame(frame: FrameType | None) -> FrameType | None:
    while frame is not None:
        name = frame.f_code.co_filename
        known = _user_file_cache.get(name)
        if known is None:
            known = _user_file_cache[name] = is_user_file(name)
        if known:
            return frame
        frame = frame.f_back
    return None


REACH_SAMPLES = 24  # backwards whose graph is walked to learn which parameters each optimizer's losses reach
REACH_NODES = 20000  # a graph larger than this is not walked (the walk is Python, one node at a time)
MAX_BATCH_PARTS = 8  # tensors of a DataLoader batch (a tuple or list) remembered by weak reference


def parameters_reached(loss: Any) -> frozenset[int] | None:
    """Ids of the leaf tensors the autograd graph of ``loss`` accumulates into (read-only walk), None if too big."""
    pending = [getattr(loss, "grad_fn", None)]
    seen: set[int] = set()
    reached: set[int] = set()
    while pending:
        node = pending.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if len(seen) > REACH_NODES:
            return None
        variable = getattr(node, "variable", None)
        if variable is not None:
            reached.add(id(variable))
        pending.extend(next_node for next_node, _ in node.next_functions)
    return frozenset(reached)


def _has_parameters(module: Any) -> bool:
    try:
        return next(iter(module.parameters()), None) is not None
    except Exception:  # noqa: BLE001 - an odd module must not break the user's forward
        return False


class PhaseClock:
    """Global hooks and wrappers that time each phase; see the module docstring. One instance per process."""

    def __init__(self, torch: ModuleType) -> None:
        self._torch = torch
        self._clock = program_clock  # stands still while the debugger holds the thread (a breakpoint in the loop)
        self._owner: int | None = None  # the thread that trains (first to fetch data or call a model)
        self._depth = 0
        self._batch_parts: tuple[weakref.ReferenceType[Any] | None, ...] = ()  # the last DataLoader batch's tensors
        self._top_start = 0.0
        self._top_split = "train"
        self._last_model_split = "train"
        self._sync: Callable[[], None] | None = None
        self._seconds = dict.fromkeys(PHASES, 0.0)
        self._eval_seconds = 0.0
        self._pending_data = 0.0
        self._pending_data_waited = 0.0
        self._data_waited = 0.0  # run-queue seconds within this step's training data phase
        self._data_waited_reads: list[float] = []  # run-queue readings at the start of data calls in progress
        self._window_waited: float | None = None  # run-queue reading at the start of this step (owner thread)
        self._pending_loader: LoaderSettings | None = None
        self._pending_loop: Location | None = None
        self._optimizer_start: float | None = None
        self._timed_before_step = 0.0  # forward + backward seconds at optimizer.step() entry (a closure adds more)
        self._window_start = self._clock()
        self._bookkeeping = 0.0
        self._losses: list[float] = []
        self._val_losses: list[float] = []
        # the last loss taken for a validation loss while gradients were on: backpropagated, it was a training loss
        self._val_output: weakref.ReferenceType[Any] | None = None
        self._loaders: weakref.WeakKeyDictionary[Any, LoaderSettings] = weakref.WeakKeyDictionary()
        self._iterators: weakref.WeakKeyDictionary[Any, LoaderSettings | None] = weakref.WeakKeyDictionary()
        self._iterator_loop: weakref.WeakKeyDictionary[Any, Location | None] = weakref.WeakKeyDictionary()
        self._optimizers: dict[int, Location] = {}
        self._models: list[weakref.ReferenceType[Any]] = []
        self.model_at: Location | None = None
        self.loop_at: Location | None = None
        self.loss_at: Location | None = None
        self.validation_at: Location | None = None
        self.output_classes: int | None = None  # classes scored by a loss the model computes itself (its logits)
        self.data_seconds_by_loader: dict[LoaderSettings, float] = {}
        self.step_listeners: list[Callable[[StepRecord], None]] = []
        self.before_step_listeners: list[Callable[[Any, int], None]] = []
        self.validation_listeners: list[Callable[[int, float, int], None]] = []
        # (model, output, loader of the batch it took or None) after each top-level pass of a module with parameters
        self.model_pass_listeners: list[Callable[[Any, Any, LoaderSettings | None], None]] = []
        self.loss_listeners: list[Callable[[], None]] = []  # after each loss computed outside any module
        # (model, positional arguments, split) as each top-level pass of a module with parameters begins
        self.model_input_listeners: list[Callable[[Any, tuple[Any, ...], str], None]] = []
        self.backward_listeners: list[Callable[[Any], None]] = []  # the tensor of each backward() on this thread
        self._fresh_batch = False  # a batch was fetched since the last model pass
        self._pass_loader: LoaderSettings | None = None
        self._top_is_model = False
        self.in_eval_forward_with_grad = False
        self._in_step = False  # inside optimizer.step(): a closure's forwards and backwards belong to that step
        self._closure_loss_taken = False
        self._stepped_any = False
        self.backwards = 0  # backward() calls on the training thread so far
        self._hand_update = steps.HandWrittenUpdate()
        self._hand_pending: tuple[list[Any], int, Any] | None = None  # (parameters, version sum, norms) at backward
        self._hand_params: tuple[tuple[int, ...], list[Any]] = ((), [])  # trained parameters, by model ids
        self._norms_now: tuple[list[Any], Any] | None = None  # (parameters, norms) read by the last check
        self._updates_bump_versions = False  # the updates seen so far were in-place writes ``_version`` counts
        self._reached: set[int] = set()
        self._reach_samples = REACH_SAMPLES
        self._handles: list[Any] = []
        self._patches = Patches("phase_clock")
        self._installed = False

    # ----------------------------------------------------------------------------------------------- installation
    def install(self) -> None:
        torch = self._torch
        from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        self._installed = True
        self._handles.append(register_module_forward_pre_hook(untraced_hook(self._forward_pre)))
        forward_post = untraced_hook(self._forward_post)
        self._handles.append(register_module_forward_hook(forward_post, with_kwargs=True, always_call=True))
        self._handles.append(register_optimizer_step_pre_hook(untraced_hook(self._optimizer_pre)))
        steps.add_step_listener(self._optimizer_post)
        import torch.utils.data.dataloader as dataloader

        # the training loss reaches torch.autograd.backward (what Tensor.backward calls) as its first argument
        backward = _Timing(read=self._now, add=self._add_backward, looks_away_when_quiet=True)
        self._wrap(torch.autograd, "backward", self._backward_returned, backward)
        data = _Timing(read=self._read_data_clock, add=self._add_data, looks_away_when_quiet=False)
        self._wrap(dataloader._BaseDataLoaderIter, "__next__", self._next_returned, data)
        self._wrap(dataloader.DataLoader, "__init__", lambda args, _kwargs, _result: self._remember_loader(args[0]))
        self._wrap(dataloader.DataLoader, "__iter__", lambda args, _kwargs, it: self._remember_iterator(args[0], it))
        self._wrap(torch.optim.Optimizer, "__init__", lambda args, _kwargs, _result: self._remember_optimizer(args[0]))

    def _wrap(self, owner: Any, name: str, after: _After, timing: _Timing | None = None) -> None:
        """Replace ``owner.name`` by ``_wrapper(original, after, timing)``, once, remembering how to undo it."""
        self._patches.replace(owner, name, lambda original: self._wrapper(original, after, timing))

    def _wrapper(self, original: Callable[..., Any], after: _After, timing: _Timing | None) -> Callable[..., Any]:
        """The one shape of every wrapper: call ``original`` unchanged and re-raise what it raises, then hand
        ``(args, kwargs, result)`` to ``after`` (which must never raise).

        Without ``timing`` the wrapper only observes: ``after`` runs once ``original`` returned. With it, a call on
        the training thread is timed with ``timing.read`` into ``timing.add`` and ``after`` runs even when
        ``original`` raised (result None): the StopIteration that ends every epoch still counts as data time.
        ``original`` is the program's call and stays traced by the debugger; ``after`` runs untraced
        (``untraced_hooks``).
        """
        after = untraced_hook(after)
        if timing is None:

            def observing(*args: Any, **kwargs: Any) -> Any:
                result = original(*args, **kwargs)
                after(args, kwargs, result)
                return result

            skip_frames(observing.__code__, calls_too=False)
            return observing

        clock = self
        read, add, honour_quiet = timing.read, timing.add, timing.looks_away_when_quiet

        def timed(*args: Any, **kwargs: Any) -> Any:
            if (
                transforming()
                or (honour_quiet and _quiet)
                or (threading.get_ident() != clock._owner and not clock._is_owner())
            ):
                return original(*args, **kwargs)
            start = read()
            result = None
            try:
                result = original(*args, **kwargs)
                return result
            finally:
                add(read() - start)
                after(args, kwargs, result)

        skip_frames(timed.__code__, calls_too=False)  # the program's call inside is Dynamo's to compile, not ours
        return timed

    def uninstall(self) -> None:
        """Remove every hook and wrapper (the benchmark compares armed and unarmed steps in one process)."""
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._patches.restore()
        self._installed = False  # the shared step counter has no removal: our listener stays but does nothing

    # ------------------------------------------------------------------------------------------------------ timing
    def _now(self) -> float:
        if self._sync is not None:
            try:
                self._sync()
            except Exception:  # noqa: BLE001 - a broken device must not break timing
                self._sync = None
        return self._clock()

    def _is_owner(self) -> bool:
        ident = threading.get_ident()
        if self._owner is None:
            self._owner = ident
        return ident == self._owner

    def _grad_enabled(self) -> bool:
        return bool(self._torch.is_grad_enabled())

    # ------------------------------------------------------------------------------------------------- forward
    def _forward_pre(self, module: Any, args: Any) -> None:
        if _quiet or (threading.get_ident() != self._owner and not self._is_owner()):
            return None
        if self._depth:
            self._depth += 1
            return None
        try:
            self._top_level_begins(module, args)
        except Exception as exc:  # noqa: BLE001
            report_once("phases-forward-pre", f"phase clock (forward) failed: {exc!r}")
        # after: a hand-written update is recognised in there, and its step record starts the next step at depth 0
        self._depth = 1
        self._top_start = self._now()
        return None

    def _top_level_begins(self, module: Any, args: Any) -> None:
        grad = self._grad_enabled()
        self._top_is_model = _has_parameters(module)
        if self._top_is_model:
            self._pass_loader, self._fresh_batch = (self._pending_loader if self._fresh_batch else None), False
            split = "train" if (module.training and grad) else "val"
            self._last_model_split = split
            for listener in list(self.model_input_listeners):
                listener(module, tuple(args), split)
            self.in_eval_forward_with_grad = grad and not module.training
            if split == "train":
                self._flush_validation()
                self._resolve_hand_written_update()
                self._remember_model(module)
                if self._pending_loop is not None:
                    self.loop_at = self._pending_loop
        else:
            # a loss module (CrossEntropyLoss, ...): its split is that of the model pass it scores
            split = self._last_model_split if grad else "val"
        self._top_split = split
        if self._pending_data:
            if split == "train":
                self._seconds["data"] += self._pending_data
                self._data_waited += self._pending_data_waited
                if self._pending_loader is not None:
                    by_loader = self.data_seconds_by_loader
                    by_loader[self._pending_loader] = by_loader.get(self._pending_loader, 0.0) + self._pending_data
            else:
                self._eval_seconds += self._pending_data
            self._pending_data = 0.0
            self._pending_data_waited = 0.0

    def _remember_model(self, module: Any) -> None:
        for ref in self._models:
            if ref() is module:
                return
        try:
            self._models.append(weakref.ref(module))
        except TypeError:
            return
        if self.model_at is None:
            self.model_at = caller_location(sys._getframe(1))

    def models(self) -> list[Any]:
        """The top-level modules with parameters seen in training passes (alive ones, first seen first)."""
        return [m for m in (ref() for ref in self._models) if m is not None]

    def _forward_post(self, module: Any, args: Any, *rest: Any) -> None:
        # rest is (kwargs, output) normally, (output,) when torch calls an always-call hook after forward raised
        if _quiet or threading.get_ident() != self._owner or self._depth <= 0:
            return None
        self._depth -= 1
        if self._depth:
            return None
        elapsed = self._now() - self._top_start
        if self._top_split == "train":
            self._seconds["forward"] += elapsed
        else:
            self._eval_seconds += elapsed
        try:
            if len(rest) == 2:
                self._top_level_ends(module, args, rest[0], rest[1])
        except Exception as exc:  # noqa: BLE001
            report_once("phases-forward-post", f"phase clock (forward) failed: {exc!r}")
        return None

    def _top_level_ends(self, module: Any, args: Any, kwargs: Any, output: Any) -> None:
        tensor_type = self._torch.Tensor
        scalar = isinstance(output, tensor_type) and output.numel() == 1 and output.is_floating_point()
        if self._top_is_model:
            for listener in list(self.model_pass_listeners):
                listener(module, output, self._pass_loader)
            self._model_output(output)
            return
        if not scalar:
            return
        self._loss_computed()
        if self._top_split == "val":
            reduction = vars(module).get("reduction") if hasattr(module, "__dict__") else None
            pair = tuple(args[:2]) if isinstance(args, tuple) else ()
            summed = summed_terms(self._torch, type(module).__name__, reduction, *pair) if len(pair) == 2 else None
            self._record_validation_loss(output, summed)

    def _model_output(self, output: Any) -> None:
        """A model that computes its own loss (a ``transformers`` ``ModelOutput`` with ``loss``): in a validation
        pass that loss is the validation loss; in training, its logits say how many classes the loss scores."""
        if self._top_split == "val":
            loss = frameworks.model_output_loss(self._torch, output)
            if loss is not None:
                self._val_losses.append(loss)
                if self.validation_at is None:
                    self.validation_at = caller_location(sys._getframe(2))
        else:
            self.output_classes = frameworks.model_output_classes(self._torch, output) or self.output_classes

    # ----------------------------------------------------------------------------------------------- validation
    def _record_validation_loss(self, output: Any, summed_over: int | None = None) -> None:
        """A validation loss, per term: a ``reduction="sum"`` loss (the MNIST example's ``test()``) divided by the
        terms it added, so the validation curve is on the training loss's scale whatever the batch size."""
        value = float(output.detach())
        self._val_losses.append(value / summed_over if summed_over else value)
        self._val_output = weakref.ref(output) if output.requires_grad else None
        if self.validation_at is None:
            self.validation_at = caller_location(sys._getframe(1))

    def pass_split(self) -> str:
        """The split of the last top-level model pass: "train" or "val"."""
        return self._last_model_split

    def pass_loader(self) -> LoaderSettings | None:
        """The DataLoader whose batch the last top-level model pass received, when it received a fresh one."""
        return self._pass_loader

    def scores_training(self) -> bool:
        """True when a loss computed now scores a training pass (gradients on, the last model pass in training)."""
        return self._last_model_split == "train" and self._grad_enabled()

    def observes_this_thread(self) -> bool:
        """True on the training thread outside ``quiet()``: where a wrapper may observe a call."""
        return not _quiet and threading.get_ident() == self._owner

    @never_raise()
    def functional_loss_returned(self, output: Any, summed_over: int | None = None) -> None:
        """An outermost ``torch.nn.functional`` loss outside any module returned ``output`` (called by the evaluation
        watch's relays): a validation loss when it scores a validation pass, exactly as a loss module's would be.
        ``summed_over``: the number of terms a ``reduction="sum"`` loss added (``summed_terms``)."""
        if self._depth or not self.observes_this_thread():
            return
        self._loss_computed()
        if not (isinstance(output, self._torch.Tensor) and output.numel() == 1 and output.is_floating_point()):
            return
        if (self._last_model_split if self._grad_enabled() else "val") == "val":
            self._record_validation_loss(output, summed_over)

    def _loss_computed(self) -> None:
        for listener in list(self.loss_listeners):
            listener()

    def _flush_validation(self) -> None:
        if not self._val_losses:
            return
        losses, self._val_losses = self._val_losses, []
        mean = sum(losses) / len(losses)
        for listener in list(self.validation_listeners):
            try:
                listener(steps.current_step(), mean, len(losses))
            except Exception as exc:  # noqa: BLE001
                report_once(f"validation-listener-{id(listener)}", f"validation listener failed: {exc!r}")

    @never_raise()
    def finish(self) -> None:
        """End of run: count a hand-written update still pending, publish a validation pass still pending."""
        self._resolve_hand_written_update()
        self._flush_validation()

    # ------------------------------------------------------------------------------------------------ backward
    def _add_backward(self, seconds: float) -> None:
        self._seconds["backward"] += seconds

    def _backward_returned(self, args: tuple[Any, ...], kwargs: dict[str, Any], _result: Any) -> None:
        self._after_backward(args[0] if args else kwargs.get("tensors"))

    @never_raise()
    def _after_backward(self, tensors: Any) -> None:
        recorded = self._val_output() if self._val_output is not None else None
        self._val_output = None
        if recorded is not None and self._val_losses and _backpropagates(tensors, recorded):
            self._val_losses.pop()  # a model left in eval mode still training: its loss is no validation loss
        self._flush_validation()
        self.in_eval_forward_with_grad = False
        self.backwards += 1
        for listener in list(self.backward_listeners):
            listener(tensors)
        is_loss = isinstance(tensors, self._torch.Tensor) and tensors.numel() == 1 and tensors.is_floating_point()
        if self._in_step:  # a closure optimizer's re-evaluation: the step's loss is the closure's first
            if is_loss and not self._closure_loss_taken:
                self._closure_loss_taken = True
                self._losses.append(float(tensors.detach()))
            return
        self._resolve_hand_written_update()
        if is_loss:
            self._losses.append(float(tensors.detach()))
            if self._reach_samples > 0 and len(self._optimizers) >= 2:
                self._reach_samples -= 1
                self._reached |= parameters_reached(tensors) or frozenset()
        where = caller_location(sys._getframe(1))
        if where is not None:
            self.loss_at = where
        if not self._stepped_any:
            self._expect_hand_written_update()

    # ------------------------------------------------------------------------------------- hand-written updates
    def _trained_parameters(self) -> list[Any]:
        models = self.models()
        key = tuple(id(m) for m in models)
        if key != self._hand_params[0]:
            self._hand_params = (key, [p for model in models for p in model.parameters() if p.requires_grad])
        return self._hand_params[1]

    def _parameter_norms(self, params: list[Any]) -> Any:
        """One fused read of every parameter (norms, kept on their device): a fingerprint that a ``.data`` write,
        invisible to ``_version``, still changes."""
        torch = self._torch
        with torch.no_grad():
            norms = torch._foreach_norm([p.detach() for p in params])
            if len({(n.dtype, n.device) for n in norms}) > 1:
                norms = [n.to(device="cpu", dtype=torch.float64) for n in norms]
            return torch.stack(norms)

    def _expect_hand_written_update(self) -> None:
        """After a backward with no optimizer step yet: remember the parameters' state, and read their gradient
        norms now (a hand-written update is usually followed by zero_grad before we could read them)."""
        params = self._trained_parameters()
        if not params:
            return
        begin = self._clock()
        self._hand_update.set_parameters(params)
        # the parameters have not changed since the last check read them (a forward and a backward write none)
        known, self._norms_now = self._norms_now, None
        norms = known[1] if known is not None and known[0] is params else None
        if norms is None and not self._updates_bump_versions:
            norms = self._parameter_norms(params)
        self._hand_pending = (params, sum(p._version for p in params), norms)
        for listener in list(self.before_step_listeners):
            try:
                listener(self._hand_update, steps.current_step() + 1)
            except Exception as exc:  # noqa: BLE001
                report_once(f"before-step-{id(listener)}", f"before-step listener failed: {exc!r}")
        self._bookkeeping += self._clock() - begin

    def _resolve_hand_written_update(self) -> None:
        """A step if the parameters changed since the last backward and no optimizer stepped in between."""
        pending, self._hand_pending = self._hand_pending, None
        if pending is None or self._stepped_any:
            return
        params, versions, norms = pending
        changed = sum(p._version for p in params) != versions
        self._updates_bump_versions = changed
        if not changed and norms is not None:
            now = self._parameter_norms(params)
            self._norms_now = (params, now)
            changed = not bool(self._torch.equal(norms, now))
        if changed:
            steps.hand_written_step(self._hand_update)

    # ------------------------------------------------------------------------------------------------------ data
    def _read_data_clock(self) -> float:
        """The data wrapper's clock (read at a call's start and end), with the thread's run-queue time beside it."""
        self._data_waited_reads.append(waited_seconds())
        return self._clock()

    def _add_data(self, seconds: float) -> None:
        self._pending_data += seconds
        reads = self._data_waited_reads
        if len(reads) >= 2:  # the end and the start of this call (a nested loader's pair comes off first)
            end, start = reads.pop(), reads.pop()
            self._pending_data_waited += max(0.0, end - start)

    def _next_returned(self, args: tuple[Any, ...], _kwargs: dict[str, Any], result: Any) -> None:
        self._after_next(args[0], result is not None)
        tensor_type = self._torch.Tensor
        if type(result) in (list, tuple):  # weak references to the batch's tensors, for ``batch_element_of``
            self._batch_parts = tuple(
                weakref.ref(part) if isinstance(part, tensor_type) else None for part in result[:MAX_BATCH_PARTS]
            )

    def batch_element_of(self, tensor: Any) -> int | None:
        """The position, in the last batch a DataLoader gave, of the tensor whose memory ``tensor`` views (a loss's
        ``targets.view(-1)`` of the batch's ``y``): which element of the dataset's ``__getitem__`` it came from."""
        try:
            pointer = tensor.untyped_storage().data_ptr()
            for index, ref in enumerate(self._batch_parts):
                part = ref() if ref is not None else None
                if part is not None and part.untyped_storage().data_ptr() == pointer:
                    return index
        except Exception:  # noqa: BLE001 - a tensor without storage (a subclass, meta): no answer
            return None
        return None

    @never_raise()
    def _after_next(self, iterator: Any, got_batch: bool = True) -> None:
        settings = self._iterators.get(iterator)
        self._pending_loader = settings
        self._fresh_batch = got_batch  # not the StopIteration that ends the epoch
        if iterator not in self._iterator_loop:
            self._iterator_loop[iterator] = caller_location(sys._getframe(1))
        self._pending_loop = self._iterator_loop.get(iterator)

    @never_raise()
    def _remember_loader(self, loader: Any) -> None:
        where = caller_location(sys._getframe(1))
        if where is None:
            return
        self._loaders[loader] = LoaderSettings(
            file=where[0],
            line=where[1],
            num_workers=int(getattr(loader, "num_workers", 0) or 0),
            pin_memory=bool(getattr(loader, "pin_memory", False)),
            persistent_workers=bool(getattr(loader, "persistent_workers", False)),
            batch_size=getattr(loader, "batch_size", None),
            dataset_getitem=dataset_getitem(static_attribute(loader, "dataset")),
        )

    @never_raise()
    def _remember_iterator(self, loader: Any, iterator: Any) -> None:
        self._iterators[iterator] = self._loaders.get(loader)

    @never_raise()
    def _remember_optimizer(self, optimizer: Any) -> None:
        where = caller_location(sys._getframe(1))
        if where is not None and id(optimizer) not in self._optimizers:
            self._optimizers[id(optimizer)] = where
            weakref.finalize(optimizer, self._optimizers.pop, id(optimizer), None)

    def optimizer_at(self, optimizer: Any = None) -> Location | None:
        """The user line that built ``optimizer`` (default: the first optimizer built)."""
        if optimizer is not None:
            return self._optimizers.get(id(optimizer))
        return next(iter(self._optimizers.values()), None)

    def loader_settings(self) -> LoaderSettings | None:
        """The loader that cost the most data time, else the first loader built."""
        if self.data_seconds_by_loader:
            return max(self.data_seconds_by_loader.items(), key=lambda item: item[1])[0]
        return next(iter(self._loaders.values()), None)

    # ------------------------------------------------------------------------------------------------ optimizer
    def _optimizer_pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if threading.get_ident() != self._owner and not self._is_owner():
            return None
        begin = self._clock()
        self._stepped_any = True
        self._hand_pending = None
        self._in_step = True
        self._closure_loss_taken = False
        for listener in list(self.before_step_listeners):
            try:
                listener(optimizer, steps.current_step() + 1)
            except Exception as exc:  # noqa: BLE001
                report_once(f"before-step-{id(listener)}", f"before-step listener failed: {exc!r}")
        self._optimizer_start = self._now()
        self._timed_before_step = self._seconds["forward"] + self._seconds["backward"]
        self._bookkeeping += self._optimizer_start - begin
        return None

    @never_raise()
    def _optimizer_post(self, step: int, optimizer: Any) -> None:
        if not self._installed or threading.get_ident() != self._owner:
            return
        self._in_step = False
        end = self._now()
        if self._optimizer_start is not None:
            # a closure (Lightning's automatic optimisation, LBFGS) ran forward and backward inside step(): that time
            # is already in those phases, not the optimizer's
            in_closure = self._seconds["forward"] + self._seconds["backward"] - self._timed_before_step
            self._seconds["optimizer"] += max(0.0, end - self._optimizer_start - in_closure)
        self._optimizer_start = None
        seconds = self._seconds
        known = sum(seconds[name] for name in PHASES if name != "other")
        window = end - self._window_start - self._bookkeeping - self._eval_seconds
        seconds["other"] = max(0.0, window - known)
        loop_at = self.loop_at or self.model_at
        record = StepRecord(
            step,
            seconds,
            self._eval_seconds,
            self._losses,
            optimizer,
            loop_at,
            frozenset(self._reached),
            self._step_waited(window, end - self._window_start),
        )
        self._data_waited = 0.0
        self._reached = set()
        self._seconds = dict.fromkeys(PHASES, 0.0)
        self._eval_seconds = 0.0
        self._losses = []
        self._bookkeeping = 0.0
        self._depth = 0  # a forward that raised and was caught must not skew the next step
        for listener in list(self.step_listeners):
            try:
                listener(record)
            except Exception as exc:  # noqa: BLE001
                report_once(f"step-record-{id(listener)}", f"step listener failed: {exc!r}")
        self._refresh_sync()
        self._window_start = self._clock()
        self._window_waited = waited_seconds()

    def _step_waited(self, training: float, window: float) -> dict[str, float]:
        """Run-queue seconds of the step that ends now: in its training data phase and over its training time (the
        window's share of it that was training, not evaluation or our bookkeeping). Empty for a step whose start was
        not read on the training thread (the first)."""
        if self._window_waited is None or window <= 0.0:
            return {}
        over_window = max(0.0, waited_seconds() - self._window_waited)
        return {"data": self._data_waited, "step": over_window * min(1.0, max(0.0, training) / window)}

    def _refresh_sync(self) -> None:
        cuda = getattr(self._torch, "cuda", None)
        try:
            uses_cuda = cuda is not None and cuda.is_available() and cuda.is_initialized()
        except Exception:  # noqa: BLE001
            uses_cuda = False
        self._sync = cuda.synchronize if uses_cuda and cuda is not None else None

    @property
    def uses_cuda(self) -> bool:
        return self._sync is not None


def _backpropagates(tensors: Any, loss: Any) -> bool:
    """Whether the backward of ``tensors`` starts at ``loss`` or one op after it (``(loss / steps).backward()``)."""
    if tensors is loss:
        return True
    node, start = getattr(loss, "grad_fn", None), getattr(tensors, "grad_fn", None)
    if node is None or start is None:
        return False
    return start is node or any(next_node is node for next_node, _ in getattr(start, "next_functions", ()))


_CLASS_DIM_LOSSES = ("cross_entropy", "nll_loss", "CrossEntropyLoss", "NLLLoss")


def summed_terms(torch: Any, name: str, reduction: Any, prediction: Any, target: Any) -> int | None:
    """How many terms a loss called with ``reduction="sum"`` added: the count a ``"mean"`` would have divided by
    (the samples, and positions, of a classification loss, whose class dimension 1 is not a term; the elements of
    an elementwise loss). None for any other reduction, or when the operands are not tensors."""
    if reduction != "sum" or not isinstance(prediction, torch.Tensor) or not isinstance(target, torch.Tensor):
        return None
    if name in _CLASS_DIM_LOSSES:
        if not target.is_floating_point():
            return int(target.numel()) or None
        classes = int(prediction.shape[1]) if prediction.dim() >= 2 else int(prediction.numel())
        return int(prediction.numel()) // max(classes, 1) or None
    return max(int(prediction.numel()), int(target.numel())) or None
