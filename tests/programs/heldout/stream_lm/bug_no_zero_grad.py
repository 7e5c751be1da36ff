"""Word-level LSTM language model, bug: the hand-written SGD loop dropped ``model.zero_grad()``, so every
``loss.backward()`` adds to the gradients of all earlier chunks and each update follows the running sum of the whole
run's gradients (clipping only rescales that sum).

Symptom (plain run): no error and the loss still falls, but slower and bumpier than in the clean run: the training
loss is 3.813, 2.463, 2.272 in epoch 1 and 1.920, 1.699, 1.690 in epoch 3 (clean: 1.798, 1.436, 1.405), it jumps
back up at the start of epoch 3 (1.692 -> 1.920), and validation/test loss end at 1.500/1.508 against the clean run's
1.373/1.376.
"""

import argparse
import math
import time

import torch
import torch.nn as nn
from corpus import Corpus
from model import RNNModel


def batchify(data, bsz):
    # Trim the stream so that it splits evenly, then lay it out as bsz columns: [len // bsz, bsz].
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i : i + seq_len]
    target = source[i + 1 : i + 1 + seq_len].reshape(-1)
    return data, target


def repackage_hidden(h):
    """Wraps hidden states in new tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def train(model, train_data, criterion, lr, epoch, args):
    model.train()
    total_loss = 0.0
    start_time = time.time()
    hidden = model.init_hidden(args.batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        data, targets = get_batch(train_data, i, args.bptt)
        # Starting each batch, we detach the hidden state from how it was previously produced.
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()  # BUG: training-logic gradients are never cleared, they add up over every step

        # clip_grad_norm_ helps prevent the exploding gradient problem in RNNs.
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)

        total_loss += loss.item()
        if batch % args.log_interval == 0 and batch > 0:
            cur_loss = total_loss / args.log_interval
            elapsed = time.time() - start_time
            print(
                f"| epoch {epoch:3d} | {batch:4d}/{len(train_data) // args.bptt:4d} batches | lr {lr:5.2f} | "
                f"ms/batch {elapsed * 1000 / args.log_interval:6.2f} | loss: {cur_loss:5.3f} | "
                f"ppl {math.exp(cur_loss):7.2f}"
            )
            total_loss = 0.0
            start_time = time.time()


def evaluate(model, data_source, criterion, args):
    model.eval()
    total_loss = 0.0
    hidden = model.init_hidden(args.eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i, args.bptt)
            output, hidden = model(data, hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def main():
    parser = argparse.ArgumentParser(description="Word-level LSTM language model on a synthetic corpus")
    parser.add_argument("--emsize", type=int, default=32, help="size of word embeddings")
    parser.add_argument("--nhid", type=int, default=64, help="number of hidden units per layer")
    parser.add_argument("--nlayers", type=int, default=1, help="number of layers")
    parser.add_argument("--lr", type=float, default=20.0, help="initial learning rate")
    parser.add_argument("--clip", type=float, default=0.25, help="gradient clipping")
    parser.add_argument("--epochs", type=int, default=3, help="upper epoch limit")
    parser.add_argument("--batch-size", type=int, default=20, help="batch size")
    parser.add_argument("--eval-batch-size", type=int, default=10, help="evaluation batch size")
    parser.add_argument("--bptt", type=int, default=25, help="sequence length")
    parser.add_argument("--dropout", type=float, default=0.2, help="dropout applied to layers")
    parser.add_argument("--log-interval", type=int, default=10, help="report interval")
    parser.add_argument("--seed", type=int, default=1111, help="random seed")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    corpus = Corpus()
    train_data = batchify(corpus.train, args.batch_size)
    val_data = batchify(corpus.valid, args.eval_batch_size)
    test_data = batchify(corpus.test, args.eval_batch_size)

    ntokens = len(corpus.dictionary)
    model = RNNModel(ntokens, args.emsize, args.nhid, args.nlayers, args.dropout)
    criterion = nn.CrossEntropyLoss()

    lr = args.lr
    best_val_loss = None
    for epoch in range(1, args.epochs + 1):
        epoch_start_time = time.time()
        train(model, train_data, criterion, lr, epoch, args)
        val_loss = evaluate(model, val_data, criterion, args)
        print("-" * 89)
        print(
            f"| end of epoch {epoch:3d} | time: {time.time() - epoch_start_time:5.2f}s | "
            f"valid loss: {val_loss:5.3f} | valid ppl {math.exp(val_loss):8.2f}"
        )
        print("-" * 89)
        if best_val_loss is None or val_loss < best_val_loss:
            best_val_loss = val_loss
        else:
            # Anneal the learning rate if no improvement has been seen on the validation set.
            lr /= 4.0

    test_loss = evaluate(model, test_data, criterion, args)
    print("=" * 89)
    print(f"| End of training | test loss: {test_loss:5.3f} | test ppl {math.exp(test_loss):8.2f}")
    print("=" * 89)


if __name__ == "__main__":
    main()
