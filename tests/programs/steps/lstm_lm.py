"""A word-level LSTM language model (the style of the PyTorch word_language_model example) on a synthetic corpus.

Truncated back-propagation through time over a batchified token stream, gradient clipping, a ``train()`` and an
``evaluate()`` per epoch. ``--lr`` picks SGD's learning rate; the default one learns."""

import argparse

import torch
import torch.nn as nn


class RNNModel(nn.Module):
    def __init__(self, ntoken: int, ninp: int, nhid: int, nlayers: int, dropout: float = 0.2) -> None:
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid, self.nlayers = nhid, nlayers

    def forward(self, inputs, hidden):
        emb = self.drop(self.encoder(inputs))
        output, hidden = self.rnn(emb, hidden)
        return self.decoder(self.drop(output)).view(-1, self.decoder.out_features), hidden

    def init_hidden(self, bsz: int):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


def synthetic_corpus(ntoken: int, length: int, generator: torch.Generator) -> torch.Tensor:
    """A token stream with structure to learn: each token mostly follows from the previous one."""
    tokens = [0]
    noise = torch.randint(0, ntoken, (length,), generator=generator).tolist()
    coin = torch.rand(length, generator=generator).tolist()
    for i in range(1, length):
        tokens.append((tokens[-1] * 3 + 1) % ntoken if coin[i] < 0.8 else noise[i])
    return torch.tensor(tokens)


def batchify(data: torch.Tensor, bsz: int) -> torch.Tensor:
    nbatch = data.size(0) // bsz
    return data[: nbatch * bsz].view(bsz, -1).t().contiguous()


def get_batch(source: torch.Tensor, i: int, bptt: int):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].reshape(-1)


def repackage_hidden(h):
    return h.detach() if isinstance(h, torch.Tensor) else tuple(repackage_hidden(v) for v in h)


def train(model, train_data, criterion, optimizer, args) -> float:
    model.train()
    total_loss = 0.0
    hidden = model.init_hidden(args.batch_size)
    batches = 0
    for i in range(0, train_data.size(0) - 1, args.bptt):
        data, targets = get_batch(train_data, i, args.bptt)
        hidden = repackage_hidden(hidden)
        optimizer.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        optimizer.step()
        total_loss += loss.item()
        batches += 1
    return total_loss / batches


def evaluate(model, data_source, criterion, args) -> float:
    model.eval()
    total_loss = 0.0
    hidden = model.init_hidden(args.batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i, args.bptt)
            output, hidden = model(data, hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=5.0)
    parser.add_argument("--clip", type=float, default=0.25)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--bptt", type=int, default=10)
    args = parser.parse_args()
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    ntoken = 50
    train_data = batchify(synthetic_corpus(ntoken, 1600, generator), args.batch_size)
    val_data = batchify(synthetic_corpus(ntoken, 240, generator), args.batch_size)
    model = RNNModel(ntoken, 32, 32, 2)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    for epoch in range(1, args.epochs + 1):
        train_loss = train(model, train_data, criterion, optimizer, args)
        val_loss = evaluate(model, val_data, criterion, args)
        print(f"epoch {epoch} train {train_loss:.3f} valid {val_loss:.3f}")


if __name__ == "__main__":
    main()
