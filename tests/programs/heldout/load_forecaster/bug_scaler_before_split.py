"""Hourly electricity-load forecasting, scaling the whole series before the chronological split.

Bug: the standard scaler is fitted on the full series (train + val + test) and only then is the series cut into
train/val/test, so the mean and standard deviation the model is trained with already contain the later months (the
load grows over time and the validation/test months are the hottest). Symptom in a plain run: none, it trains and its
validation/test errors look as good as (or a little better than) the clean run's; the test error is not an honest
estimate of forecasting unseen future hours.
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
    raw[:, 2] = np.log1p(raw[:, 2])  # irradiance is heavily skewed

    scaler = StandardScaler()
    series = scaler.fit_transform(raw)  # BUG: leakage scaler statistics computed over val/test hours too
    n_train, n_val = int(0.7 * len(series)), int(0.15 * len(series))
    train, val, test = series[:n_train], series[n_train : n_train + n_val], series[n_train + n_val :]

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
