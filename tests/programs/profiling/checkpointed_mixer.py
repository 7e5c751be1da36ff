"""A small MLP-Mixer-style classifier trained with activation checkpointing, written the way memory-bound training
code is: argparse, main(), blocks in a ModuleList, ``torch.utils.checkpoint`` around each block (the forward is run
again inside backward), a label-smoothed cross entropy written by hand.

Many small modules on small tensors: each step is mostly Python calls, so a function profiler slows it several times
over, and slows the backward (the re-run forwards) most. The profile tests compare the time per phase that
``tensorsight profile`` reports with the one a measured run (the code lens) reports for this script.
"""

import argparse

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class MixerBlock(nn.Module):
    def __init__(self, tokens: int, channels: int) -> None:
        super().__init__()
        self.token_norm = nn.LayerNorm(channels)
        self.token_mix = nn.Sequential(nn.Linear(tokens, tokens), nn.GELU(), nn.Linear(tokens, tokens))
        self.channel_norm = nn.LayerNorm(channels)
        self.channel_mix = nn.Sequential(nn.Linear(channels, channels), nn.GELU(), nn.Linear(channels, channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.token_mix(self.token_norm(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mix(self.channel_norm(x))


class Mixer(nn.Module):
    def __init__(self, tokens: int, channels: int, depth: int, classes: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(MixerBlock(tokens, channels) for _ in range(depth))
        self.head = nn.Linear(channels, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False)
        return self.head(x.mean(dim=1))


def smoothed_cross_entropy(logits: torch.Tensor, target: torch.Tensor, smoothing: float) -> torch.Tensor:
    log_probs = logits.log_softmax(dim=-1)
    nll = -log_probs.gather(1, target.unsqueeze(1)).squeeze(1)
    return ((1.0 - smoothing) * nll - smoothing * log_probs.mean(dim=-1)).mean()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--depth", type=int, default=12)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()

    torch.manual_seed(0)
    tokens, channels, classes = 8, 16, 4
    model = Mixer(tokens, channels, args.depth, classes)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    inputs = torch.randn(256, tokens, channels)
    labels = inputs[:, :, :classes].sum(dim=1).argmax(dim=1)
    for step in range(args.steps):
        batch = torch.randint(0, len(inputs), (16,))
        optimizer.zero_grad()
        loss = smoothed_cross_entropy(model(inputs[batch]), labels[batch], smoothing=0.1)
        loss.backward()
        optimizer.step()
        if step % 20 == 0:
            print(f"step {step}: loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
