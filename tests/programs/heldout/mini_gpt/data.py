"""A synthetic character stream: sentences drawn from a small grammar of repeated words, and a Dataset of
(input, next-character target) windows over it."""

import random

import torch
from torch.utils.data import Dataset

SUBJECTS = ["the cat", "a dog", "my friend", "the old man", "a small bird", "her sister"]
VERBS = ["sees", "likes", "finds", "chases", "paints", "hears"]
OBJECTS = ["the ball", "a red box", "the moon", "some fish", "the garden", "a green hat"]
ENDINGS = [".", " today.", " again.", " at night."]


def make_text(num_sentences, seed):
    """``num_sentences`` sentences of the grammar, joined by spaces, drawn with their own seeded generator."""
    rng = random.Random(seed)
    sentences = []
    for _ in range(num_sentences):
        sentence = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}{rng.choice(ENDINGS)}"
        sentences.append(sentence)
    return " ".join(sentences)


class CharTokenizer:
    def __init__(self, text):
        self.chars = sorted(set(text))
        self.stoi = {ch: i for i, ch in enumerate(self.chars)}
        self.itos = dict(enumerate(self.chars))

    @property
    def vocab_size(self):
        return len(self.chars)

    def encode(self, text):
        return [self.stoi[ch] for ch in text]

    def decode(self, ids):
        return "".join(self.itos[int(i)] for i in ids)


class CharDataset(Dataset):
    """Every window of ``block_size + 1`` characters: the first ``block_size`` are the input, the last
    ``block_size`` (shifted by one) the targets."""

    def __init__(self, text, tokenizer, block_size):
        self.data = torch.tensor(tokenizer.encode(text), dtype=torch.long)
        self.block_size = block_size

    def __len__(self):
        return len(self.data) - self.block_size

    def __getitem__(self, idx):
        chunk = self.data[idx : idx + self.block_size + 1]
        x = chunk[:-1]
        y = chunk[1:]
        return x, y
