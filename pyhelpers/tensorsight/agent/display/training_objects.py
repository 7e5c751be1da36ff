"""The facts of an optimizer (hyperparameters per group, completed steps), a dataset (length, sample shapes) and a
data loader (batch size, workers, shuffle), read without running user code.

Called by ``presentation`` (their lines) and ``children`` (their expanded rows).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from tensorsight.agent.display.reading import quiet_torch, type_name
from tensorsight.core.notation import short_dtype
from tensorsight.core.summary import DatasetFacts, LoaderFacts, OptimizerFacts


def _scalar(value: Any) -> Any:
    """Hyperparameters may be 0-d tensors (capturable optimizers): show them as numbers."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor) and value.numel() == 1:
        with quiet_torch():
            return value.item()
    if isinstance(value, (tuple, list)):
        return type(value)(_scalar(v) for v in value)
    return value


def optimizer_step(optimizer: Any) -> int | None:
    """Completed steps: the ``step`` an optimizer keeps in its state (Adam, RMSprop...), else our step hook's count."""
    try:
        for state in optimizer.state.values():
            if isinstance(state, dict) and "step" in state:
                return int(_scalar(state["step"]))
    except Exception:  # noqa: BLE001
        pass
    steps = sys.modules.get("tensorsight.agent.runtime.steps")
    counter = getattr(steps, "step_count", None)
    if callable(counter):
        with contextlib.suppress(Exception):
            count = counter(optimizer)
            if count is not None:
                return int(count)
    try:
        if optimizer.state:
            return None  # state without a step counter (SGD's momentum buffers): the count is not kept
        stateless = type(optimizer).__name__ == "SGD" and all(not g.get("momentum") for g in optimizer.param_groups)
        return None if stateless else 0  # the others create their state on the first step
    except Exception:  # noqa: BLE001
        return None


def optimizer_facts(optimizer: Any) -> OptimizerFacts:
    groups = []
    tensors = 0
    for group in optimizer.param_groups:
        tensors += len(group.get("params", ()))
        groups.append({k: _scalar(v) for k, v in group.items() if k != "params"})
    return OptimizerFacts(
        name=type(optimizer).__name__, groups=tuple(groups), step=optimizer_step(optimizer), tensors=tensors
    )


def _loader_shuffle(loader: Any) -> tuple[bool | None, str | None]:
    data = sys.modules.get("torch.utils.data")
    sampler = getattr(loader, "sampler", None)
    if loader.batch_size is None and getattr(loader, "batch_sampler", None) is not None:
        sampler = loader.batch_sampler
    name = type(sampler).__name__ if sampler is not None else None
    if data is not None:
        if isinstance(sampler, data.RandomSampler):
            return True, name
        if isinstance(sampler, data.SequentialSampler):
            return False, name
    shuffle = getattr(sampler, "shuffle", None)
    return (shuffle if isinstance(shuffle, bool) else None), name


def length_of(value: Any) -> int | None:
    try:
        return len(value)
    except Exception:  # noqa: BLE001 - iterable datasets have no length
        return None


def dataset_facts(dataset: Any) -> DatasetFacts:
    """A dataset's class and length; the per-sample shapes of a ``TensorDataset`` (read from its tensors, never by
    indexing: ``__getitem__`` is user code) and what a ``Subset`` picks from."""
    name = type_name(dataset)
    data = sys.modules.get("torch.utils.data")
    length = length_of(dataset) if callable(getattr(type(dataset), "__len__", None)) else None
    if data is not None and isinstance(dataset, data.TensorDataset):
        tensors = getattr(dataset, "tensors", ())
        samples = tuple(_sample_text(t) for t in tensors[:MAX_DATASET_FIELDS])
        return DatasetFacts(name, length, samples + (("…",) if len(tensors) > MAX_DATASET_FIELDS else ()))
    if data is not None and isinstance(dataset, data.Subset):
        base = dataset.dataset
        base_length = length_of(base) if callable(getattr(type(base), "__len__", None)) else None
        return DatasetFacts(name, length_of(dataset.indices), of=type_name(base), of_length=base_length)
    return DatasetFacts(name, length)


MAX_DATASET_FIELDS = 4  # a TensorDataset line names the sample shapes of its first tensors only


def _sample_text(tensor: Any) -> str:
    """``f32[1, 28, 28]``: dtype and shape of one sample of a TensorDataset's tensor (its first dimension dropped)."""
    return f"{short_dtype(tensor.dtype)}[{', '.join(str(int(d)) for d in tuple(tensor.shape)[1:])}]"


def loader_facts(loader: Any) -> LoaderFacts:
    shuffle, sampler = _loader_shuffle(loader)
    dataset_len = length_of(loader.dataset)
    return LoaderFacts(
        batch_size=loader.batch_size,
        num_workers=int(loader.num_workers),
        shuffle=shuffle,
        drop_last=bool(loader.drop_last),
        dataset_len=dataset_len,
        batches=length_of(loader) if dataset_len is not None else None,
        sampler=sampler,
    )
