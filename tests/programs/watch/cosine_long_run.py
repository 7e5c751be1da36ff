"""A long unattended training run, written the way retrieval code is: argparse and main(), an endless batch stream,
a cosine-similarity classifier that L2-normalises its features by hand, AdamW. At ``--bad-step`` the stream yields a
batch holding an all-zero row (a blank record from an upstream join): its norm is 0, and the hand-written
normalisation makes 0/0 = NaN there. ``--bad-step 0`` never yields one (the clean version)."""

import argparse

import torch
from torch import nn


def batches(dim, batch_size, bad_step):
    generator = torch.Generator().manual_seed(0)
    step = 0
    while True:
        step += 1
        x = torch.randn(batch_size, dim, generator=generator)
        if step == bad_step:
            x[3] = 0.0
        y = (x[:, 0] > 0).long()
        yield x, y


def normalise(x):
    return x / x.norm(dim=1, keepdim=True)  # @nan


class CosineClassifier(nn.Module):
    def __init__(self, dim, classes):
        super().__init__()
        self.prototypes = nn.Parameter(torch.randn(classes, dim) * 0.1)
        self.scale = 10.0

    def forward(self, features):
        return self.scale * normalise(features) @ normalise(self.prototypes).T


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--bad-step", type=int, default=19000)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = CosineClassifier(16, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    stream = batches(16, 32, args.bad_step)
    for step in range(1, args.steps + 1):
        x, y = next(stream)
        logits = model(x)
        loss = nn.functional.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 5000 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    print("trained", args.steps, "steps")


if __name__ == "__main__":
    main()
