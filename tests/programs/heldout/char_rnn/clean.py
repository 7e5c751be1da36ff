"""Character-level GRU language model (clean): batchified stream, truncated BPTT with the hidden state detached."""

import argparse

import torch
import torch.nn as nn
from corpus import batchify, get_batch, make_corpus


class CharRNN(nn.Module):
    def __init__(self, vocab_size, hidden=64):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, 32)
        self.rnn = nn.GRU(32, hidden)
        self.decoder = nn.Linear(hidden, vocab_size)

    def forward(self, x, hidden):
        output, hidden = self.rnn(self.embed(x), hidden)
        return self.decoder(output).view(-1, self.decoder.out_features), hidden


def train_epoch(model, source, criterion, optimizer, bptt):
    model.train()
    hidden = None
    total, batches = 0.0, 0
    for i in range(0, source.size(0) - 1, bptt):
        data, targets = get_batch(source, i, bptt)
        if hidden is not None:
            hidden = hidden.detach()
        optimizer.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
        total += loss.item()
        batches += 1
    return total / batches


def main():
    parser = argparse.ArgumentParser(description="Char-level GRU language model")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--bptt", type=int, default=35)
    parser.add_argument("--batch-size", type=int, default=20)
    args = parser.parse_args()
    torch.manual_seed(0)
    ids, vocab = make_corpus()
    train_data = batchify(ids, args.batch_size)
    model = CharRNN(len(vocab))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.005)
    for epoch in range(args.epochs):
        loss = train_epoch(model, train_data, criterion, optimizer, args.bptt)
        print(f"epoch {epoch + 1} loss: {loss:.4f}")


if __name__ == "__main__":
    main()
