"""A small synthetic corpus for the word-level language model: sentences from a toy grammar, split into a training,
a validation and a test stream of word ids."""

import random

import torch

SINGULAR_NOUNS = ["cat", "dog", "bird", "child", "farmer", "teacher"]
PLURAL_NOUNS = ["cats", "dogs", "birds", "children", "farmers", "teachers"]
SINGULAR_VERBS = ["sees", "likes", "follows", "finds"]
PLURAL_VERBS = ["see", "like", "follow", "find"]
ADJECTIVES = ["small", "old", "happy", "green"]
PLACES = ["garden", "house", "field", "river"]


class Dictionary:
    def __init__(self):
        self.word2idx = {}
        self.idx2word = []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


def noun_phrase(rng):
    plural = rng.random() < 0.5
    words = ["the"]
    if rng.random() < 0.4:
        words.append(rng.choice(ADJECTIVES))
    words.append(rng.choice(PLURAL_NOUNS if plural else SINGULAR_NOUNS))
    return words, plural


def sentence(rng):
    subject, plural = noun_phrase(rng)
    verb = rng.choice(PLURAL_VERBS if plural else SINGULAR_VERBS)
    obj, _ = noun_phrase(rng)
    words = [*subject, verb, *obj]
    if rng.random() < 0.3:
        words += ["in", "the", rng.choice(PLACES)]
    return [*words, "<eos>"]


class Corpus:
    """Generates ``num_sentences`` sentences with a fixed seed and splits them 80/10/10 into token streams."""

    def __init__(self, num_sentences=3000, seed=1234):
        rng = random.Random(seed)
        sentences = [sentence(rng) for _ in range(num_sentences)]
        self.dictionary = Dictionary()
        for words in sentences:
            for word in words:
                self.dictionary.add_word(word)
        n_train = int(0.8 * num_sentences)
        n_valid = int(0.1 * num_sentences)
        self.train = self.tokenize(sentences[:n_train])
        self.valid = self.tokenize(sentences[n_train : n_train + n_valid])
        self.test = self.tokenize(sentences[n_train + n_valid :])

    def tokenize(self, sentences):
        ids = [self.dictionary.word2idx[word] for words in sentences for word in words]
        return torch.tensor(ids, dtype=torch.long)
