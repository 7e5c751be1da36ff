"""Bug class: shapes. A layer sized for another input: ``mat1 and mat2 shapes cannot be multiplied``.

The classifier's input size was computed for 32x32 images (16 * 8 * 8 = 1024 features) but the data is 28x28, so
after two poolings the flattened features number 16 * 7 * 7 = 784. Torch stops with
``mat1 and mat2 shapes cannot be multiplied (64x784 and 1024x10)`` deep inside ``torch/nn/functional.py``.

    python -m tensorsight doctor examples/bug_shape_error.py

turns the error into a ``shape`` finding at the line of ``forward`` that calls the layer, naming the module
(``model.classifier``), the operands (input ``f32[64, 784]``, weight ``f32[10, 1024]``) and the fix.
"""

import torch
from torch import nn

torch.manual_seed(0)


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Linear(16 * 8 * 8, 10)  # sized for 32x32 images

    def forward(self, x):
        x = self.features(x)
        x = x.flatten(1)
        return self.classifier(x)  # BUG: receives 16 * 7 * 7 = 784 features, expects 1024


images = torch.randn(256, 1, 28, 28)
labels = torch.randint(0, 10, (256,))
model = SmallCNN()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for start in range(0, len(images), 64):
    logits = model(images[start : start + 64])
    loss = nn.functional.cross_entropy(logits, labels[start : start + 64])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
