"""Synthetic daily sales of a few hundred stores (numpy only): calendar and store features, units sold, and the
days a store was closed (recorded as 0 units)."""

import numpy as np
import torch
from torch.utils.data import Dataset

FEATURES = ["weekday", "promo", "holiday", "store_size", "competition_km", "price_index"]


def load_sales(days=1500, seed=7):
    rng = np.random.default_rng(seed)
    weekday = rng.integers(0, 7, days)
    promo = rng.integers(0, 2, days)
    holiday = (rng.random(days) < 0.05).astype(np.int64)
    store_size = rng.normal(1.0, 0.25, days)
    competition_km = rng.exponential(3.0, days)
    price_index = rng.normal(1.0, 0.1, days)
    table = np.stack([weekday, promo, holiday, store_size, competition_km, price_index], axis=1).astype(np.float32)
    log_units = 3.0 + 0.4 * promo - 0.3 * holiday + 0.8 * store_size - 0.05 * competition_km - 0.7 * price_index
    units = np.exp(log_units + rng.normal(0.0, 0.1, days)).round()
    closed = rng.random(days) < 0.03
    units[closed] = 0.0
    return table, units.astype(np.float32)


def standardize(train, other):
    mean, std = train.mean(axis=0), train.std(axis=0) + 1e-6
    return (train - mean) / std, (other - mean) / std


class SalesRows(Dataset):
    """Rows of features and a one-column target, kept as numpy and converted per row."""

    def __init__(self, features, target):
        self.features = features
        self.target = target.reshape(-1, 1)

    def __len__(self):
        return len(self.features)

    def __getitem__(self, index):
        return torch.from_numpy(self.features[index]), torch.from_numpy(self.target[index])
