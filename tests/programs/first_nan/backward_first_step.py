"""NaN born in backward during the very first step: a cosine classifier's hand-written L2 norm,
``torch.sqrt((h * h).sum(...))``, meets an all-zero padding row in the first batch. The forward is finite (the
division adds 1e-6), but the derivative of sqrt at 0 is infinite and backward makes 0/0 = NaN."""

import sys

import torch
from torch import nn

FIXED = "--fixed" in sys.argv  # a norm whose gradient at 0 is finite


class CosineClassifier(nn.Module):
    def __init__(self, features: int, classes: int) -> None:
        super().__init__()
        self.embed = nn.Linear(features, 32, bias=False)
        self.classes = nn.Parameter(torch.randn(classes, 32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.embed(x))
        if FIXED:
            norm = torch.linalg.vector_norm(h, dim=1, keepdim=True)
        else:
            norm = torch.sqrt((h * h).sum(dim=1, keepdim=True))  # @nan
        unit = h / (norm + 1e-6)
        return 10 * unit @ nn.functional.normalize(self.classes, dim=1).T


def main() -> None:
    torch.manual_seed(0)
    inputs = torch.randn(128, 12)
    targets = torch.randint(0, 4, (128,))
    inputs[3] = 0.0  # a padding row in the first batch
    model = CosineClassifier(12, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(4):
        batch = slice(step * 32, (step + 1) * 32)
        loss = loss_fn(model(inputs[batch]), targets[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step}  loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
