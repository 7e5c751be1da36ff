"""Softmax regression in a ``while True:`` loop at module level that stops itself on a NaN loss, as beginner code
does: ``if torch.isnan(loss): break`` before any backward(). The cross-entropy is written by hand and the features
are unscaled, so after one step one softmax probability underflows to 0 and ``torch.log`` makes -Inf;
multiplied by a 0 in the one-hot targets it is NaN."""

import sys

import torch

torch.manual_seed(1)
N, D, K = 300, 4, 3
X = torch.randn(N, D) * 8
labels = (X @ torch.randn(D, K)).argmax(dim=1)  # a linear rule the model can learn
onehot = torch.nn.functional.one_hot(labels, K).float()

W = torch.randn(D, K, requires_grad=True)
FIXED = "--fixed" in sys.argv  # the stable form (log_softmax) and a learning rate for unscaled features
optimizer = torch.optim.SGD([W], lr=0.01 if FIXED else 2.0)
step = 0
while True:
    if FIXED:
        loss = -(onehot * torch.log_softmax(X @ W, dim=1)).sum(dim=1).mean()
    else:
        probs = torch.softmax(X @ W, dim=1)
        loss = -(onehot * torch.log(probs)).sum(dim=1).mean()  # @nan
    if torch.isnan(loss):
        print("loss is nan at step", step)
        sys.exit(1)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    step += 1
    if step % 100 == 0:
        print("step", step, "loss", round(loss.item(), 4))
    if step >= 2000:
        break
print("done")
