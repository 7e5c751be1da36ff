"""A short training loop whose loss is scaled by a tensor subclass outside any module: the NaN sentinel's mode passes
that op on from a hook that runs untraced, and the subclass's own ``__torch_function__`` (the program's code) must
still stop at its breakpoint (tests/agent/debugger/test_untraced_hooks.py)."""

import torch
from torch import nn


class Scale(torch.Tensor):
    calls = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        Scale.calls += 1  # @bp subclass
        return super().__torch_function__(func, types, args, kwargs or {})


def main():
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scale = torch.ones(1).as_subclass(Scale)
    inputs, targets = torch.randn(8, 4), torch.randn(8, 1)
    for _step in range(3):
        optimizer.zero_grad()
        error = nn.functional.mse_loss(model(inputs), targets)
        loss = (error * scale).sum()
        loss.backward()
        optimizer.step()
    print("subclass calls", Scale.calls)


if __name__ == "__main__":
    main()
