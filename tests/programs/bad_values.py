"""The bad inputs a summary must survive (issue 2), built once for the in-process tests and the debuggee alike.

Used by tests/agent/display/test_good_guest.py directly and by tests/programs/tensors_bad.py under a real debugger.
"""

import os
import tempfile
import warnings

import numpy as np
import torch

calls = {"torch_function": 0}


class Tagged(torch.Tensor):
    """A user subclass whose __torch_function__ counts calls: the debugger must not trigger it."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        calls["torch_function"] += 1
        return super().__torch_function__(func, types, args, kwargs or {})


class Exploding(torch.Tensor):
    """A wrapper subclass whose every operation raises: its stats cannot be computed."""

    @staticmethod
    def __new__(cls, shape):
        return torch.Tensor._make_wrapper_subclass(cls, shape, dtype=torch.float32)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError(f"{func} is not supported by Exploding")


def bad_values() -> dict:
    """Name -> value; creating some of these warns (beta or deprecated features), so creation is silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dense = torch.zeros(10, 10)
        dense[0, 0] = 3.0
        dense[5, 5] = -1.0
        leaf = torch.full((4, 4), 0.5, requires_grad=True)
        memmapped = np.memmap(os.path.join(tempfile.mkdtemp(), "values.bin"), np.float32, "w+", shape=(100,))
        memmapped[:] = np.arange(100, dtype=np.float32)
        return {
            "meta": torch.empty(1000, 1000, device="meta"),
            "coo": dense.to_sparse(),
            "csr": dense.to_sparse_csr(),
            "quantized": torch.quantize_per_tensor(torch.tensor([-1.0, 0.0, 0.5, 1.0] * 5), 0.5, 0, torch.qint8),
            "complex_values": torch.tensor([1 + 1j, 2 - 1j, complex(float("nan"), 0)] * 4, dtype=torch.complex64),
            "flags": torch.tensor([True, False] * 10),
            "integers": torch.arange(-50, 50, dtype=torch.int8),
            "empty": torch.empty(0, 5),
            "scalar": torch.tensor(3.5),
            "transposed": torch.arange(20.0).reshape(4, 5).t(),
            "stepped": torch.arange(100.0)[::7],
            "expanded": torch.tensor([1.0, 2.0]).expand(3, 2),
            "huge": torch.arange(4.0).expand(250_000_000_000, 4),  # 1e12 elements over 16 bytes
            "leaf": leaf,
            "nonleaf": leaf * 2,
            "tagged": torch.arange(6.0).as_subclass(Tagged),
            "exploding": Exploding((3, 3)),
            "half": torch.linspace(-1, 1, 101, dtype=torch.float16),
            "nested": torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]),
            "lazy": torch.nn.LazyLinear(3),
            "objects": np.array([{"a": 1}, None], dtype=object),
            "records": np.zeros(3, dtype=[("a", "i4"), ("b", "f8")]),
            "strings": np.array(["alpha", "beta"]),
            "memmapped": memmapped,
        }
