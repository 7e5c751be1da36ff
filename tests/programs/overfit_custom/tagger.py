"""Sequence tagger (embedding + GRU) on padded batches; the loss is objectives.masked_token_loss, which reshapes
with the batch's own sizes and weights the tokens by the padding mask built from the batch."""

import argparse

import torch
from objectives import masked_token_loss
from torch import nn

PAD = 0


class Tagger(nn.Module):
    def __init__(self, vocab, dim, tags):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=PAD)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, tags)

    def forward(self, tokens):
        hidden, _ = self.rnn(self.embed(tokens))
        return self.out(hidden)


def make_batch(generator, batch, length, vocab, tags):
    tokens = torch.randint(1, vocab, (batch, length), generator=generator)
    lengths = torch.randint(length // 2, length + 1, (batch,), generator=generator)
    mask = torch.arange(length)[None, :] < lengths[:, None]
    tokens = tokens.masked_fill(~mask, PAD)
    return tokens, tokens % tags, mask


def main():
    parser = argparse.ArgumentParser(description="token tagging")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1)
    model = Tagger(vocab=50, dim=32, tags=5)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(args.steps):
        tokens, tags, mask = make_batch(generator, args.batch_size, 12, 50, 5)
        logits = model(tokens)
        loss = masked_token_loss(logits, tags, mask)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
