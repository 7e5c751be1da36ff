"""Test program: the NaN sentinel is a good guest (tests/agent/sentinel/test_sentinel_doctor.py).

A model with BatchNorm (running statistics updated in forward) and Dropout (random draws) in which a NaN is born
inside a module at step 2, so the sentinel replays that forward to find the op. The program writes what it can
observe of its own state to the JSON file named on the command line: the test runs it plainly and under the doctor
and requires the two to match, i.e. the replay drew nothing from the program's RNG and left the buffers alone.
"""

import json
import sys

import torch
from torch import nn


class Scorer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.5), nn.Linear(8, 1))

    def forward(self, x: torch.Tensor, gain: float) -> torch.Tensor:
        # with a negative gain the square root is taken of negative numbers: NaN
        return torch.sqrt(self.body(x).abs() * gain + 1.0)  # @nan


torch.manual_seed(0)
model = Scorer()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
losses = []
for step in range(1, 4):
    batch = torch.randn(16, 4)
    loss = model(batch, 1.0 if step != 2 else -100.0).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(repr(loss.item()))
state = {
    "losses": losses,
    "next_random": torch.rand(3).tolist(),
    "running_mean": model.body[1].running_mean.tolist(),
    "batches_tracked": int(model.body[1].num_batches_tracked),
    "params": [repr(p.sum().item()) for p in model.parameters()],
}
with open(sys.argv[1], "w", encoding="utf-8") as handle:
    json.dump(state, handle)
