"""Hourly electricity-load forecasting with a log transform of the solar irradiance.

Bug: the irradiance is log-transformed with np.log instead of np.log1p; it is exactly 0 every night, so the feature
holds -inf, the scaler's mean becomes -inf/NaN, every scaled sample is NaN and so are the predictions and the loss.
Symptom in a plain run: `loss: nan` from the first epoch, the validation error is nan and early stopping never
records a best model.
"""

import argparse
import time

import numpy as np
import torch
import torch.nn as nn
from data import FEATURES, TARGET, make_load_series
from engine import evaluate, fit
from models import GRUForecaster
from torch.utils.data import DataLoader, Dataset


class StandardScaler:
    def fit(self, x):
        self.mean_ = x.mean(axis=0)
        self.scale_ = x.std(axis=0) + 1e-8
        return self

    def fit_transform(self, x):
        return self.fit(x).transform(x)

    def transform(self, x):
        return (x - self.mean_) / self.scale_

    def inverse_transform(self, x, column=None):
        if column is None:
            return x * self.scale_ + self.mean_
        return x * self.scale_[column] + self.mean_[column]


class WindowDataset(Dataset):
    """Window i: inputs are hours [i, i + lookback), targets the load at [i + lookback, i + lookback + horizon)."""

    def __init__(self, series, lookback, horizon, target_col=TARGET):
        self.series = torch.as_tensor(series, dtype=torch.float32)
        self.lookback, self.horizon, self.target_col = lookback, horizon, target_col

    def __len__(self):
        return len(self.series) - self.lookback - self.horizon + 1

    def __getitem__(self, i):
        end = i + self.lookback
        x = self.series[i:end]
        y = self.series[end : end + self.horizon, self.target_col]
        return x, y


def main():
    parser = argparse.ArgumentParser(description="GRU load forecaster")
    parser.add_argument("--hours", type=int, default=3000)
    parser.add_argument("--lookback", type=int, default=24)
    parser.add_argument("--horizon", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args()
    torch.manual_seed(0)
    start = time.time()

    raw = make_load_series(args.hours)
    raw[:, 2] = np.log(raw[:, 2])  # BUG: nonfinite irradiance is skewed, but log(0) = -inf at night

    n_train, n_val = int(0.7 * len(raw)), int(0.15 * len(raw))
    train_raw, val_raw, test_raw = raw[:n_train], raw[n_train : n_train + n_val], raw[n_train + n_val :]
    scaler = StandardScaler().fit(train_raw)
    train, val, test = scaler.transform(train_raw), scaler.transform(val_raw), scaler.transform(test_raw)

    train_ds = WindowDataset(train, args.lookback, args.horizon)
    val_ds = WindowDataset(val, args.lookback, args.horizon)
    test_ds = WindowDataset(test, args.lookback, args.horizon)
    train_loader = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True)
    val_loader = DataLoader(val_ds, batch_size=256)
    test_loader = DataLoader(test_ds, batch_size=256)
    print(f"features: {FEATURES}, windows: train {len(train_ds)} val {len(val_ds)} test {len(test_ds)}")

    model = GRUForecaster(n_features=raw.shape[1], horizon=args.horizon)
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    best_val = fit(model, train_loader, val_loader, criterion, optimizer, epochs=args.epochs, patience=3)

    test_mse = evaluate(model, test_loader, criterion)
    rmse_mw = test_mse**0.5 * scaler.scale_[TARGET]
    print(f"best val mse {best_val:.4f} | test mse {test_mse:.4f} (RMSE {rmse_mw:.1f} MW) | {time.time() - start:.1f}s")


if __name__ == "__main__":
    main()
