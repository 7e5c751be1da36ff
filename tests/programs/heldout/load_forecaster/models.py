"""Forecasting models: a GRU encoder over the input window with a linear head for the next `horizon` steps."""

import torch.nn as nn


class GRUForecaster(nn.Module):
    def __init__(self, n_features, horizon=1, hidden_size=32, num_layers=1, dropout=0.2):
        super().__init__()
        self.gru = nn.GRU(n_features, hidden_size, num_layers=num_layers, batch_first=True)
        self.head = nn.Sequential(
            nn.Dropout(dropout),
            nn.Linear(hidden_size, hidden_size),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden_size, horizon),
        )

    def forward(self, x):
        # x: [batch, lookback, n_features]
        out, _ = self.gru(x)
        return self.head(out[:, -1])  # [batch, horizon]
