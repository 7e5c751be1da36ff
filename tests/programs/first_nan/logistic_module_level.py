"""Logistic regression written by hand at module level, as tutorials write it: no nn.Module, a weight vector and a
bias that require grad, a hand-written binary cross-entropy and a hand-written update. The learning rate is too
high for unscaled features, the sigmoid saturates to exactly 1.0 after about 140
epochs and ``torch.log(1 - h)`` makes -Inf."""

import sys

import torch

FIXED = "--fixed" in sys.argv  # the stable form: the loss from the logits

torch.manual_seed(0)
X = torch.randn(200, 5) * 40
true_w = torch.tensor([1.5, -2.0, 0.7, 3.0, -1.0])
y = (X @ true_w > 0).float()

W = torch.zeros(5, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
lr = 0.0005

for epoch in range(300):
    z = X.matmul(W) + b
    if FIXED:
        cost = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
    else:
        h = torch.sigmoid(z)
        cost = -(y * torch.log(h) + (1 - y) * torch.log(1 - h)).mean()  # @nan
    cost.backward()
    with torch.no_grad():
        W -= lr * W.grad
        b -= lr * b.grad
        W.grad.zero_()
        b.grad.zero_()
    if epoch % 50 == 0:
        print(f"epoch {epoch:4d} cost {cost.item():.6f}")
print("final cost", cost.item())
