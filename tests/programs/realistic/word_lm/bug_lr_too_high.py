"""The LSTM language model with a learning rate far too high for its hand-written SGD update (150 instead of 20).

Gradient clipping keeps every value finite, so nothing turns NaN: the loss jumps between ~2 and ~30 from one report
to the next and the perplexity of the final model is astronomical.
"""

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RNNModel(nn.Module):
    """Embedding -> dropout -> LSTM -> dropout -> linear decoder over the vocabulary."""

    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nlayers, self.nhid = nlayers, nhid
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.decoder.out_features)
        return decoded, hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


def synthetic_corpus(ntokens, length, seed):
    """Token ids drawn from a Markov chain: each word has one likely successor (80%) and two rarer ones."""
    rules = torch.Generator().manual_seed(99)
    successors = torch.randint(0, ntokens, (ntokens, 3), generator=rules)
    generator = torch.Generator().manual_seed(seed)
    ids = torch.empty(length, dtype=torch.long)
    ids[0] = 0
    choices = torch.multinomial(torch.tensor([0.8, 0.1, 0.1]), length, replacement=True, generator=generator)
    for i in range(1, length):
        ids[i] = successors[ids[i - 1], choices[i]]
    return ids


def batchify(data, bsz, device):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous().to(device)


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i : i + seq_len]
    target = source[i + 1 : i + 1 + seq_len].view(-1)
    return data, target


def repackage_hidden(h):
    """Detach hidden states from their history, so backprop stops at the batch boundary."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def train(args, model, train_data, lr, epoch):
    model.train()
    total_loss = 0.0
    hidden = model.init_hidden(args.batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        data, targets = get_batch(train_data, i, args.bptt)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = F.cross_entropy(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        total_loss += loss.item()
        if batch % args.log_interval == 0 and batch > 0:
            cur_loss = total_loss / args.log_interval
            print(f"| epoch {epoch} | batch {batch} | lr {lr:.2f} | loss {cur_loss:.3f} | ppl {math.exp(cur_loss):.2f}")
            total_loss = 0.0


def evaluate(args, model, data_source):
    model.eval()
    total_loss = 0.0
    hidden = model.init_hidden(args.eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i, args.bptt)
            output, hidden = model(data, hidden)
            total_loss += len(data) * F.cross_entropy(output, targets).item()
            hidden = repackage_hidden(hidden)
    return total_loss / (len(data_source) - 1)


def main():
    parser = argparse.ArgumentParser(description="LSTM word language model on a synthetic corpus")
    parser.add_argument("--emsize", type=int, default=16)
    parser.add_argument("--nhid", type=int, default=32)
    parser.add_argument("--nlayers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=150.0)  # BUG: dynamics (lr=150 overshoots at every step)
    parser.add_argument("--clip", type=float, default=0.25)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--eval-batch-size", type=int, default=10)
    parser.add_argument("--bptt", type=int, default=16)
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=1111)
    parser.add_argument("--log-interval", type=int, default=5)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ntokens = 20
    train_data = batchify(synthetic_corpus(ntokens, 4000, seed=1), args.batch_size, device)
    val_data = batchify(synthetic_corpus(ntokens, 1000, seed=2), args.eval_batch_size, device)
    test_data = batchify(synthetic_corpus(ntokens, 1000, seed=3), args.eval_batch_size, device)

    model = RNNModel(ntokens, args.emsize, args.nhid, args.nlayers, args.dropout).to(device)
    lr = args.lr
    best_val_loss = None
    for epoch in range(1, args.epochs + 1):
        train(args, model, train_data, lr, epoch)
        val_loss = evaluate(args, model, val_data)
        print(f"| end of epoch {epoch} | valid loss {val_loss:.3f} | valid ppl {math.exp(val_loss):.2f}")
        if best_val_loss is None or val_loss < best_val_loss:
            best_val_loss = val_loss
        else:
            lr /= 4.0
    test_loss = evaluate(args, model, test_data)
    print(f"| end of training | test loss {test_loss:.3f} | test ppl {math.exp(test_loss):.2f}")


if __name__ == "__main__":
    main()
