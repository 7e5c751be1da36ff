"""Inf from an overflow: a hand-written softmax calls `torch.exp` on scores that grew past float32's range.

`AttentionPool` scores each of a sequence's positions and averages them with a softmax written out by hand, without
subtracting the maximum first. `exp(x)` overflows float32 for x above ~88.7. A batch of louder recordings (step 4)
pushes a few scores past that: `exp` returns +inf, inf / inf is NaN, and the loss is NaN from then on.
(`torch.softmax`, or subtracting `scores.amax(dim=1, keepdim=True)` first, avoids it.)

The overflow happens inside the model's forward, so TensorSight replays that forward op by op and stops on the
`torch.exp` line marked `# @nan`, in the user's frame, with `scores` in Variables.
"""

import torch
from torch import nn


class AttentionPool(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.score = nn.Linear(features, 1)
        self.head = nn.Linear(features, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: [batch, time, features]
        scores = self.score(x).squeeze(-1)
        weights = torch.exp(scores)  # @nan
        weights = weights / weights.sum(dim=1, keepdim=True)
        pooled = (weights.unsqueeze(-1) * x).sum(dim=1)
        return self.head(pooled).squeeze(-1)


torch.manual_seed(0)
recordings = torch.randn(8 * 16, 10, 6)
recordings[3 * 16 : 4 * 16] *= 300.0  # BUG: batch 4 was recorded with a different gain and never normalised
targets = recordings.mean(dim=(1, 2))
model = AttentionPool(6)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

for step in range(1, 9):
    batch = slice((step - 1) * 16, step * 16)
    loss = nn.functional.mse_loss(model(recordings[batch]), targets[batch])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}  loss {loss.item():.4f}")
