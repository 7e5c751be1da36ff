"""A small Transformer classifier with a hand-written masked self-attention, AdamW, a linear warm-up, gradient
clipping and a key padding mask. One sequence of the third batch is all padding: every key of its rows is masked, the
row is all -inf and its softmax is NaN. The pooled output zeroes the padded positions, so the forward output stays
finite and the NaN shows up in the gradients."""

import argparse
import math

import torch
import torch.nn.functional as F
from torch import nn


class MaskedSelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        batch, length, dim = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.heads, dim // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(dim // self.heads)
        scores = scores.masked_fill(pad[:, None, None, :], float("-inf"))
        weights = F.softmax(scores, dim=-1)  # @nan
        mixed = (weights @ v).transpose(1, 2).reshape(batch, length, dim)
        return self.out(mixed)


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = MaskedSelfAttention(dim, heads)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), pad)
        return x + self.mlp(self.norm2(x))


class Classifier(nn.Module):
    def __init__(self, vocab: int, dim: int, classes: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=0)
        self.pos = nn.Parameter(torch.zeros(1, 16, dim))
        self.blocks = nn.ModuleList(Block(dim, 4) for _ in range(2))
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        pad = tokens == 0
        x = self.embed(tokens) + self.pos[:, : tokens.shape[1]]
        for block in self.blocks:
            x = block(x, pad)
        keep = (~pad).unsqueeze(-1)
        pooled = x.masked_fill(~keep, 0.0).sum(1) / keep.sum(1).clamp(min=1)
        return self.head(pooled)


def make_batches(count: int, size: int, empty: bool) -> list[tuple[torch.Tensor, torch.Tensor]]:
    batches = []
    for index in range(count):
        lengths = torch.randint(4, 16, (size,))
        tokens = torch.randint(1, 50, (size, 16))
        tokens[torch.arange(16)[None, :] >= lengths[:, None]] = 0
        if index == 2 and empty:
            tokens[5] = 0  # an empty review: all padding
        labels = (tokens.sum(1) % 2).long()
        batches.append((tokens, labels))
    return batches


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--fixed", action="store_true", help="no empty review in the data")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Classifier(50, 32, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 10))
    batches = make_batches(6, 8, empty=not args.fixed)
    for epoch in range(args.epochs):
        for tokens, labels in batches:
            loss = F.cross_entropy(model(tokens), labels)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
        print(f"epoch {epoch} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
