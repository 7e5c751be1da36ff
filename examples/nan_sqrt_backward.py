"""NaN born in backward: the gradient of sqrt at 0 in an L2 normalisation, while the forward pass looks fine.

`CosineClassifier` normalises its features with a hand-written norm, `torch.sqrt((h * h).sum(...))`. One sample of
batch 3 is an all-zero padding row, so its features are all 0 and the norm is sqrt(0) = 0: the forward pass is finite
(the `+ 1e-6` protects the division), the loss is finite, but the derivative of sqrt at 0 is infinite and backward
makes it 0/0 = NaN. The weights become NaN at that step's `optimizer.step()` and every later loss is NaN.
(`F.normalize` or `torch.linalg.vector_norm` avoid this.)

`torch.autograd.detect_anomaly` would raise deep inside backward. TensorSight stops on the forward line whose backward
produced the NaN from finite gradients: the `torch.sqrt` line marked `# @nan`, replayed in the user's frame.
"""

import torch
from torch import nn


class CosineClassifier(nn.Module):
    def __init__(self, features: int, classes: int) -> None:
        super().__init__()
        self.embed = nn.Linear(features, 32, bias=False)
        self.classes = nn.Parameter(torch.randn(classes, 32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.embed(x))
        norm = torch.sqrt((h * h).sum(dim=1, keepdim=True))  # @nan
        unit = h / (norm + 1e-6)
        return 10 * unit @ nn.functional.normalize(self.classes, dim=1).T


torch.manual_seed(0)
inputs = torch.randn(256, 12)
targets = torch.randint(0, 4, (256,))
inputs[2 * 32 + 5] = 0.0  # a padding row in batch 3
model = CosineClassifier(12, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.CrossEntropyLoss()

for step in range(1, 9):
    batch = slice((step - 1) * 32, step * 32)
    loss = loss_fn(model(inputs[batch]), targets[batch])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}  loss {loss.item():.4f}")
