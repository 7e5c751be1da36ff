"""Clean: a small word-level transformer language model (sinusoidal positional encoding, causal mask).

Every broadcast here is intended: the positional-encoding table ``position * div_term`` ([L, 1] x [D/2]), adding the
encoding ``x + pe[:, : x.size(1)]``, the causal mask, the attention scaling. The doctor must report no shape issue.
"""

import argparse
import math

import torch
import torch.nn.functional as F
from torch import nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(1, max_len, d_model)
        pe[0, :, 0::2] = torch.sin(position * div_term)
        pe[0, :, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        x = x + self.pe[:, : x.size(1)]
        return self.dropout(x)


class SelfAttention(nn.Module):
    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x, mask):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        scores = scores.masked_fill(mask[:T, :T] == 0, float("-inf"))
        att = F.softmax(scores, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d_model, n_head):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = SelfAttention(d_model, n_head)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x, mask):
        x = x + self.attn(self.ln1(x), mask)
        return x + self.mlp(self.ln2(x))


class TransformerLM(nn.Module):
    def __init__(self, vocab, d_model=32, n_head=4, n_layer=2, block=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = PositionalEncoding(d_model, max_len=5000)
        self.blocks = nn.ModuleList([Block(d_model, n_head) for _ in range(n_layer)])
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)
        self.register_buffer("mask", torch.tril(torch.ones(block, block)))

    def forward(self, idx):
        x = self.embed(idx) * math.sqrt(self.embed.embedding_dim)
        x = self.pos(x)
        for block in self.blocks:
            x = block(x, self.mask)
        return self.head(self.ln(x))


def get_batch(data, block, batch):
    starts = torch.randint(len(data) - block - 1, (batch,))
    x = torch.stack([data[s : s + block] for s in starts])
    y = torch.stack([data[s + 1 : s + 1 + block] for s in starts])
    return x, y


def train(model, data, optimizer, args, epoch):
    model.train()
    for _ in range(args.steps):
        x, y = get_batch(data, args.block, args.batch_size)
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
    print(f"epoch {epoch} train loss {loss.item():.3f}")


def evaluate(model, data, args):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for _ in range(4):
            x, y = get_batch(data, args.block, args.batch_size)
            logits = model(x)
            total += F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1)).item()
    return total / 4


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--block", type=int, default=16)
    args = parser.parse_args()
    torch.manual_seed(0)
    vocab = 50
    corpus = torch.randint(vocab, (2000,))
    train_data, val_data = corpus[:1800], corpus[1800:]
    model = TransformerLM(vocab, block=args.block)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(1, args.epochs + 1):
        train(model, train_data, optimizer, args, epoch)
        print(f"epoch {epoch} val loss {evaluate(model, val_data, args):.3f}")


if __name__ == "__main__":
    main()
