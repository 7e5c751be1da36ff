"""Test program: a gradient born in backward of an op outside any module (tests/agent/sentinel/test_sentinel_doctor.py).

The distance between an embedding and itself is sqrt(0) = 0: finite forward, NaN gradient in backward.
"""

import torch
from torch import nn

torch.manual_seed(0)
encoder = nn.Linear(3, 2)
optimizer = torch.optim.SGD(encoder.parameters(), lr=0.1)
anchors = torch.randn(4, 3)
for step in range(1, 4):
    positives = anchors + (0.0 if step == 2 else 0.1)  # step 2: positives identical to the anchors
    difference = encoder(anchors) - encoder(positives)
    distance = torch.sqrt((difference * difference).sum(dim=1))  # @nan
    loss = distance.mean()
    optimizer.zero_grad()
    loss.backward()  # @backward
    optimizer.step()
