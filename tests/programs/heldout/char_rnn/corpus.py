"""A synthetic character corpus (words drawn at random) and the batchify/get_batch helpers of the word LM example."""

import numpy as np
import torch


def make_corpus(length=20000, seed=0):
    rng = np.random.default_rng(seed)
    words = ["the ", "cat ", "sat ", "on ", "a ", "mat ", "and ", "dog ", "ran ", "far "]
    text = "".join(words[i] for i in rng.integers(0, len(words), length // 3))[:length]
    vocab = sorted(set(text))
    ids = torch.tensor([vocab.index(c) for c in text], dtype=torch.long)
    return ids, vocab


def batchify(data, batch_size):
    steps = data.size(0) // batch_size
    return data[: steps * batch_size].view(batch_size, -1).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i : i + seq_len]
    target = source[i + 1 : i + 1 + seq_len].reshape(-1)
    return data, target
