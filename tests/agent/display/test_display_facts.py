"""The display package's parts on their own, without a debugger: which values are ours to show (``kinds``), what a
tensor's and an array's line reads from them (``tensor_facts``), and the facts of optimizers, datasets and loaders
(``training_objects``). The Variables view over a real debugpy session is ``test_variables.py``.
"""

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Subset, TensorDataset

from tensorsight.agent.display.kinds import can_expand, can_present, kind_of
from tensorsight.agent.display.reading import Group, Info
from tensorsight.agent.display.tensor_facts import array_facts, tensor_facts, uninitialised
from tensorsight.agent.display.training_objects import dataset_facts, loader_facts, optimizer_facts, optimizer_step


@pytest.mark.parametrize(
    ("value", "kind", "expandable"),
    [
        (torch.zeros(2), "tensor", True),
        (torch.nn.Parameter(torch.zeros(2)), "tensor", True),
        (np.zeros(2), "array", True),
        (torch.nn.Linear(2, 2), "module", True),
        (TensorDataset(torch.zeros(4, 2)), "dataset", False),  # its own attributes are what one expands it for
        (Info("a fact"), "info", False),
        (Group("rows", list), "group", True),
        (3, None, False),
        ("text", None, False),
    ],
)
def test_a_value_is_ours_to_show_by_its_type(value, kind, expandable):
    assert kind_of(value) == kind
    assert can_present(type(value)) is (kind is not None)
    assert can_expand(type(value)) is expandable


def test_a_hostile_metaclass_is_not_ours_and_raises_nothing():
    class Hostile(type):
        def __subclasscheck__(cls, other):
            raise RuntimeError("no")

    assert can_present(Hostile("H", (), {})) is False
    assert can_present("not a type") is False


def test_tensor_facts_read_the_values_without_changing_the_tensor():
    x = torch.tensor([1.0, float("nan"), 3.0], requires_grad=True)
    y = x * 2
    version = x._version
    facts = tensor_facts(y)
    assert (facts.dtype, facts.shape, facts.where, facts.grad_fn) == ("f32", (3,), "cpu", "MulBackward0")
    assert facts.stats is not None and facts.stats.nan == 1
    assert facts.values is not None and facts.values[0] == 2.0
    assert x._version == version and y.grad_fn is not None and facts.requires_grad


def test_a_lazy_parameter_has_no_shape_and_says_so():
    layer = torch.nn.LazyLinear(3)
    assert uninitialised(torch, layer.weight)
    facts = tensor_facts(layer.weight)
    assert facts.shape is None and "uninitialised" in (facts.note or "")


def test_an_array_names_its_class_where_a_tensor_names_its_device():
    memmap_like = np.arange(6, dtype=np.float32).reshape(2, 3).view(np.recarray)
    facts = array_facts(memmap_like)
    assert facts.where == "recarray" and facts.shape == (2, 3) and facts.dtype == "f32"


def test_optimizer_steps_come_from_its_state_or_are_unknown():
    p = torch.nn.Parameter(torch.ones(2))
    sgd = torch.optim.SGD([p], lr=0.1)
    adam = torch.optim.Adam([p], lr=0.01)
    assert optimizer_step(sgd) is None  # plain SGD keeps no step counter
    assert optimizer_step(adam) == 0
    p.grad = torch.ones(2)
    adam.step()
    facts = optimizer_facts(adam)
    assert facts.step == 1 and facts.tensors == 1 and facts.groups[0]["lr"] == 0.01


def test_dataset_and_loader_facts_come_from_their_attributes_never_from_getitem():
    class Loud(TensorDataset):
        def __getitem__(self, index):
            raise AssertionError("user code ran")

    data = Loud(torch.zeros(10, 1, 28, 28), torch.zeros(10, dtype=torch.long))
    assert dataset_facts(data).samples == ("f32[1, 28, 28]", "i64[]")
    half = Subset(data, range(5))
    facts = dataset_facts(half)
    assert (facts.length, facts.of, facts.of_length) == (5, "Loud", 10)
    loader = loader_facts(DataLoader(data, batch_size=4, shuffle=True))
    assert (loader.shuffle, loader.dataset_len, loader.batches, loader.sampler) == (True, 10, 3, "RandomSampler")
