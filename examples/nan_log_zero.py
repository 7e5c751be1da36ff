"""NaN from log(0) in a hand-written loss: binary cross-entropy written out by hand on a saturated sigmoid.

The classifier becomes confident quickly; once a logit passes ~17, `torch.sigmoid` returns exactly 1.0 in float32,
so `1 - p` is 0 and `torch.log(1 - p)` is -inf. Multiplied by a label of 0 it turns into NaN, and the loss is NaN
from that step on. (`F.binary_cross_entropy_with_logits` computes the same loss without this problem.)

TensorSight stops on the `torch.log` that produced the -inf from finite inputs: the line marked `# @nan`, in the
user's frame, with `p` and `labels` in Variables.
"""

import torch
from torch import nn

torch.manual_seed(0)

features = torch.randn(512, 20)
labels = (features[:, :5].sum(dim=1) > 0).float()  # separable: the model can become arbitrarily confident
model = nn.Linear(20, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=10.0)


def bce(p: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy, written by hand."""
    return -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()  # @nan


for step in range(1, 41):
    batch = slice((step * 64) % 512, (step * 64) % 512 + 64)
    p = torch.sigmoid(model(features[batch]).squeeze(1))
    loss = bce(p, labels[batch])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 5 == 0:
        print(f"step {step:2d}  loss {loss.item():.4g}")
