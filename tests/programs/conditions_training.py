"""Test program for tensor breakpoint conditions (tests/agent/conditions/test_breakpoints_dap.py).

A small training loop in which each `# @bp NAME` line has a value that first satisfies predicate NAME at a known
step; the test puts `tensorsight.NAME(...)` conditions on those lines and checks the step each one stops at.
"""

import torch
from torch import nn


class Masking(torch.Tensor):
    """A subclass whose reductions hide NaN: a predicate that ran its ``__torch_function__`` would miss it."""

    calls = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        Masking.calls += 1
        if getattr(func, "__name__", "") in ("sum", "isnan", "isfinite", "isinf", "norm", "_foreach_norm", "any"):
            return torch.tensor(0.0)
        return super().__torch_function__(func, types, args, kwargs or {})


torch.manual_seed(0)
model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.0)  # weights stay put: gradients depend on the batch only
features = torch.randn(8, 4)

for step in range(1, 11):
    batch = features * (1e4 if step == 4 else 1.0)
    loss = model(batch).pow(2).mean()
    if step == 6:
        loss = loss.detach().requires_grad_()  # a graph cut by mistake: the model gets no gradient this step
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    probe = torch.tensor([1.0, float("nan") if step == 3 else 2.0])
    limit = torch.tensor([float("-inf") if step == 5 else 1.0])
    level = 10.0 if step == 7 else 1.0
    activations = torch.zeros(6 if step == 6 else 8, 10)
    placed = torch.zeros(2, device="meta" if step == 8 else "cpu")
    dead = torch.zeros(3) if step == 9 else torch.ones(3)
    phase = torch.ones(2) * (step // 5)
    masked = probe.as_subclass(Masking)
    pass  # @bp nan
    pass  # @bp inf
    pass  # @bp nonfinite
    pass  # @bp spike
    pass  # @bp grad_norm
    pass  # @bp shape_is
    pass  # @bp wrong_device
    pass  # @bp zero
    pass  # @bp exploding
    pass  # @bp changed
    pass  # @bp grad_missing
    pass  # @bp on_rank
    pass  # @bp undefined
    pass  # @bp misuse
    pass  # @bp subclass
    pass  # @bp misused_number
    pass  # @bp syntax
    pass  # @bp helper
    pass  # @bp raises
print("done")
print(f"torch_function calls: {Masking.calls}")
