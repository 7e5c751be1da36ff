"""The sentiment model of bug_sigmoid_before_logits_loss.py: model.py, but returning probabilities (a sigmoid)."""

import torch
import torch.nn as nn


class SentimentLSTM(nn.Module):
    def __init__(self, vocab_size, embed_dim=32, hidden_dim=32):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=0)
        self.lstm = nn.LSTM(embed_dim, hidden_dim, batch_first=True)
        self.fc = nn.Linear(hidden_dim, 1)

    def forward(self, tokens):
        embedded = self.embedding(tokens)
        _, (hidden, _) = self.lstm(embedded)
        probability = torch.sigmoid(self.fc(hidden[-1]))  # BUG: training-logic sigmoid before BCEWithLogitsLoss
        return probability.squeeze(1)
