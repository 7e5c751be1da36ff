"""A synthetic review corpus: token ids where a few 'positive' and 'negative' words decide the label, and a Dataset."""

import numpy as np
import torch
from torch.utils.data import Dataset

VOCAB_SIZE = 200
POSITIVE = np.arange(2, 12)
NEGATIVE = np.arange(12, 22)


def make_reviews(n, length=20, seed=0):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(22, VOCAB_SIZE, size=(n, length))
    labels = rng.integers(0, 2, size=n)
    for row, label in enumerate(labels):
        words = POSITIVE if label == 1 else NEGATIVE
        slots = rng.choice(length, size=3, replace=False)
        tokens[row, slots] = rng.choice(words, size=3)
    return tokens.astype(np.int64), labels.astype(np.float32)


class ReviewDataset(Dataset):
    def __init__(self, tokens, labels):
        self.tokens = torch.from_numpy(tokens)
        self.labels = torch.from_numpy(labels)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return self.tokens[index], self.labels[index]
