"""Transformer language model with sinusoidal positional encoding, on a synthetic Markov-chain corpus.

The positional table is built by the usual intended broadcast (positions ``[max_len, 1]`` times frequencies
``[d_model / 2]``) and added to ``[seq, batch, d_model]`` embeddings; a causal mask hides the future. SGD with a
StepLR schedule and gradient clipping, F.cross_entropy, evaluate() in eval mode under torch.no_grad().
"""

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        x = x + self.pe[: x.size(0)]
        return self.dropout(x)


class TransformerModel(nn.Module):
    def __init__(self, ntoken, d_model, nhead, d_hid, nlayers, dropout=0.1):
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(ntoken, d_model)
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        layer = nn.TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(layer, nlayers, enable_nested_tensor=False)
        self.linear = nn.Linear(d_model, ntoken)

    def forward(self, src, src_mask):
        src = self.embedding(src) * math.sqrt(self.d_model)
        src = self.pos_encoder(src)
        output = self.transformer_encoder(src, src_mask, is_causal=True)
        return self.linear(output)


def synthetic_corpus(ntokens, length, seed):
    """Token ids of a Markov chain: each word has one likely successor (80%) and two rarer ones."""
    successors = torch.randint(0, ntokens, (ntokens, 3), generator=torch.Generator().manual_seed(7))
    generator = torch.Generator().manual_seed(seed)
    choices = torch.multinomial(torch.tensor([0.8, 0.1, 0.1]), length, replacement=True, generator=generator)
    ids = [0]
    for i in range(1, length):
        ids.append(int(successors[ids[-1], choices[i]]))
    return torch.tensor(ids)


def batchify(data, bsz, device):
    seq_len = data.size(0) // bsz
    return data[: seq_len * bsz].view(bsz, seq_len).t().contiguous().to(device)


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].reshape(-1)


def train(args, model, train_data, optimizer, scheduler, ntokens, epoch):
    model.train()
    total_loss = 0.0
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        data, targets = get_batch(train_data, i, args.bptt)
        mask = nn.Transformer.generate_square_subsequent_mask(data.size(0))
        output = model(data, mask)
        loss = F.cross_entropy(output.view(-1, ntokens), targets)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        total_loss += loss.item()
        if batch % args.log_interval == 0 and batch > 0:
            lr = scheduler.get_last_lr()[0]
            print(f"| epoch {epoch} | batch {batch} | lr {lr:.2f} | loss {total_loss / args.log_interval:.3f}")
            total_loss = 0.0


def evaluate(args, model, eval_data, ntokens):
    model.eval()
    total_loss = 0.0
    with torch.no_grad():
        for i in range(0, eval_data.size(0) - 1, args.bptt):
            data, targets = get_batch(eval_data, i, args.bptt)
            mask = nn.Transformer.generate_square_subsequent_mask(data.size(0))
            output = model(data, mask)
            total_loss += len(data) * F.cross_entropy(output.view(-1, ntokens), targets).item()
    return total_loss / (len(eval_data) - 1)


def main():
    parser = argparse.ArgumentParser(description="Transformer LM on a synthetic corpus")
    parser.add_argument("--emsize", type=int, default=32)
    parser.add_argument("--nhid", type=int, default=64)
    parser.add_argument("--nlayers", type=int, default=2)
    parser.add_argument("--nhead", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--train-tokens", type=int, default=4000)
    parser.add_argument("--val-tokens", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--bptt", type=int, default=16)
    parser.add_argument("--log-interval", type=int, default=5)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ntokens = 20
    train_data = batchify(synthetic_corpus(ntokens, args.train_tokens, seed=1), args.batch_size, device)
    val_data = batchify(synthetic_corpus(ntokens, args.val_tokens, seed=2), 10, device)

    model = TransformerModel(ntokens, args.emsize, args.nhead, args.nhid, args.nlayers, args.dropout).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.95)
    for epoch in range(1, args.epochs + 1):
        train(args, model, train_data, optimizer, scheduler, ntokens, epoch)
        val_loss = evaluate(args, model, val_data, ntokens)
        print(f"| end of epoch {epoch} | valid loss {val_loss:.3f} | valid ppl {math.exp(val_loss):.2f}")
        scheduler.step()


if __name__ == "__main__":
    main()
