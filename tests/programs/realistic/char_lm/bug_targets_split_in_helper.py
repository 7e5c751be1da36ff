"""Character-level GPT on a synthetic corpus of short sentences, trained by a Trainer (trainer.py) with callbacks.

The text is encoded to character ids and batchified into rows of ``block + 1`` ids, the last rows padded with the
pad id. A helper splits each row into inputs and targets, but cuts the targets from the same span as the inputs (the
shift to the next character was dropped), so the model learns to copy its input and the loss drops to near zero.
Validation and test streams are batchified the same way and scored by a callback at the end of each epoch.
"""

import argparse
import math
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from trainer import Trainer

WORDS = "the cat dog sat ran on under a mat log big small red fast slow".split()
PAD = 0


def synthetic_text(sentences, seed):
    rng = random.Random(seed)
    lines = []
    for _ in range(sentences):
        lines.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 6))) + ".")
    return "\n".join(lines)


class CharCodec:
    def __init__(self, text):
        self.chars = sorted(set(text))
        self.index = {c: i + 1 for i, c in enumerate(self.chars)}  # 0 is the pad id

    @property
    def vocab_size(self):
        return len(self.chars) + 1

    def encode(self, text):
        return torch.tensor([self.index[c] for c in text], dtype=torch.long)


def batchify(ids, block, rows_multiple):
    """Rows of ``block + 1`` ids; the stream is padded so the row count is a multiple of ``rows_multiple``."""
    row = block + 1
    rows = math.ceil(len(ids) / row)
    rows = math.ceil(rows / rows_multiple) * rows_multiple
    padded = torch.full((rows * row,), PAD, dtype=torch.long)
    padded[: len(ids)] = ids
    return padded.view(rows, row)


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class CharGPT(nn.Module):
    def __init__(self, vocab_size, block, dim=48, heads=4, layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim)
        self.pos = nn.Parameter(torch.zeros(1, block, dim))
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab_size)
        self.register_buffer("mask", torch.triu(torch.ones(block, block, dtype=torch.bool), diagonal=1))

    def forward(self, idx):
        t = idx.size(1)
        x = self.tok(idx) + self.pos[:, :t]
        for block in self.blocks:
            x = block(x, self.mask[:t, :t])
        return self.head(self.ln_f(x))


def split_rows(batch):
    inputs = batch[:, :-1]
    targets = batch[:, :-1].reshape(-1)  # BUG: training-logic the targets are cut from the inputs' span
    return inputs, targets


def next_char_loss(model, batch):
    inputs, targets = split_rows(batch)
    logits = model(inputs).flatten(0, 1)
    return F.cross_entropy(logits, targets, ignore_index=PAD)


@torch.no_grad()
def stream_loss(model, stream):
    model.eval()
    losses = [next_char_loss(model, stream[i : i + 32]).item() for i in range(0, stream.size(0), 32)]
    model.train()
    return sum(losses) / len(losses)


def main():
    parser = argparse.ArgumentParser(description="character-level GPT on synthetic sentences")
    parser.add_argument("--block", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    torch.manual_seed(args.seed)

    text = synthetic_text(500, seed=1)
    codec = CharCodec(text)
    train_data = batchify(codec.encode(text), args.block, args.batch_size)
    val_data = batchify(codec.encode(synthetic_text(60, seed=2)), args.block, 16)
    test_data = batchify(codec.encode(synthetic_text(60, seed=3)), args.block, 16)

    model = CharGPT(codec.vocab_size, args.block)
    trainer = Trainer(model, next_char_loss, train_data, lr=args.lr, batch_size=args.batch_size, epochs=args.epochs)

    def log_batch(trainer):
        if trainer.iter_num % 10 == 0:
            print(f"iter {trainer.iter_num}: train loss: {trainer.loss.item():.4f}")

    def validate(trainer):
        print(f"epoch {trainer.epoch}: val loss {stream_loss(trainer.model, val_data):.4f}")

    trainer.add_callback("on_batch_end", log_batch)
    trainer.add_callback("on_epoch_end", validate)
    trainer.run()
    print(f"test loss {stream_loss(model, test_data):.4f}")


if __name__ == "__main__":
    main()
