"""Test program: with the NaN sentinel armed, the program sees exactly what it sees without TensorSight
(tests/agent/sentinel/test_sentinel_doctor.py and tests/agent/sentinel/test_sentinel_dap.py run it plainly and under TensorSight and
compare the JSON it writes to the file named on the command line).

Its model keeps state the way real models do: an EMA in a plain tensor attribute updated in place, a call counter, a
list it appends to, and Dropout drawing from the RNG. At step 2 a NaN is born inside the model (``# @nan``), so the
sentinel replays that forward to find the op. Outside the model, the loop uses a tensor subclass that counts its
``__torch_function__`` calls, and warnings come from a torch op and from user code, each recorded with its file and
line as the program's own filters (default: once per location) let them through.
"""

import json
import sys
import warnings

import torch
from torch import nn


class Counted(torch.Tensor):
    """A tensor subclass that counts how often torch dispatches to it."""

    calls = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        Counted.calls += 1
        return super().__torch_function__(func, types, args, kwargs or {})


class Smoothed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.25), nn.Linear(8, 4))
        self.ema = torch.zeros(4)  # a plain attribute, not a buffer
        self.calls = 0
        self.history = []

    def forward(self, x: torch.Tensor, gain: float) -> torch.Tensor:
        self.calls += 1
        out = self.body(x)
        self.ema.mul_(0.9).add_(0.1 * out.detach().mean(dim=0))
        self.history.append(round(float(out.detach().abs().sum()), 4))
        return torch.log(out.abs() * gain + 1.0)  # @nan


torch.manual_seed(0)
model = Smoothed()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
scale = torch.ones(4).as_subclass(Counted)
seen = []
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("default")
    for step in range(1, 5):
        batch = torch.randn(16, 4)
        out = model(batch, 1.0 if step != 2 else -1e6)
        loss = (out * scale).mean()  # the subclass outside any module
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        # torch warns here (copy construct from a tensor), once: the default filter shows a location once
        copied = torch.tensor(loss.detach())  # @torch_warning
        if step % 2 == 0:
            warnings.warn("user warning every other step", stacklevel=1)  # @user_warning
        seen.append(repr(float(copied)))
    warnings_seen = [(w.category.__name__, w.filename, w.lineno) for w in caught]

state = {
    "losses": seen,
    "ema": model.ema.tolist(),
    "ema_version": model.ema._version,
    "calls": model.calls,
    "history": model.history,
    "subclass_calls": Counted.calls,
    "warnings": warnings_seen,
    "next_random": torch.rand(3).tolist(),
    "params": [repr(p.sum().item()) for p in model.parameters()],
}
with open(sys.argv[1], "w", encoding="utf-8") as handle:
    json.dump(state, handle)
