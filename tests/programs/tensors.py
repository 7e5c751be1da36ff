"""Debuggee for tests/agent/display/test_variables.py: one frame holding every kind of value TensorSight presents.

Values are deterministic so the test can assert exact summary lines. After the pause, the program checks that
the debugger changed nothing (values, ``_version``, autograd graph, RNG states) and prints the verdict.
"""

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
np.random.seed(0)

weights = (torch.arange(64 * 16, dtype=torch.float32).reshape(64, 16) / 1024).requires_grad_()
(weights * 2).sum().backward()  # weights.grad: all 2
scaled = weights * 3  # non-leaf, grad_fn=MulBackward0
bad = torch.tensor(float("nan"))
mixed = torch.tensor([1.0, float("nan"), float("inf"), -float("inf")] * 4)
small = torch.tensor([0.5, -1.0, 2.0])
zeros = torch.zeros(8, 4)
mask = torch.arange(10) % 3 == 0
counts = torch.arange(100)
array = np.arange(12.0).reshape(3, 4)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
model[2].eval()
optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
model(torch.ones(2, 4)).sum().backward()
optimizer.step()
dataset = TensorDataset(torch.zeros(100, 4), torch.zeros(100, dtype=torch.long))
loader = DataLoader(dataset, batch_size=16, shuffle=True)

tensors = {"weights": weights, "scaled": scaled, "mixed": mixed, "grad": weights.grad, "array": array}
versions = {name: t._version for name, t in tensors.items() if isinstance(t, torch.Tensor)}
copies = {name: (t.detach().numpy() if isinstance(t, torch.Tensor) else t).copy() for name, t in tensors.items()}
grad_fn = scaled.grad_fn
rng_torch = torch.get_rng_state()
rng_numpy = np.random.get_state()[1].copy()

print("paused")  # @bp

changed = [name for name, t in tensors.items() if isinstance(t, torch.Tensor) and t._version != versions[name]]
for name, t in tensors.items():
    try:
        np.testing.assert_array_equal(t.detach().numpy() if isinstance(t, torch.Tensor) else t, copies[name])
    except AssertionError:
        changed.append(name)
if scaled.grad_fn is not grad_fn or weights.grad_fn is not None:
    changed.append("autograd graph")
if not torch.equal(torch.get_rng_state(), rng_torch):
    changed.append("torch RNG")
if not np.array_equal(np.random.get_state()[1], rng_numpy):
    changed.append("numpy RNG")
print("STATE " + ("OK" if not changed else "CHANGED: " + ", ".join(changed)))
