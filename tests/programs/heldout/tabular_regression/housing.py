"""Synthetic house-price table (numpy only): eight numeric features, a price in 100k units, some unsold (0)."""

import numpy as np
import torch
from torch.utils.data import Dataset

FEATURES = ["rooms", "area", "age", "distance", "floor", "garden", "school", "noise"]


def load_housing(n=1000, seed=42):
    rng = np.random.default_rng(seed)
    rooms = rng.integers(1, 7, n)
    area = rooms * 22 + rng.normal(0, 10, n)
    age = rng.uniform(0, 80, n)
    distance = rng.exponential(8, n)
    floor = rng.integers(0, 12, n)
    garden = rng.integers(0, 2, n)
    school = rng.uniform(1, 10, n)
    noise = rng.normal(60, 8, n)
    features = np.stack([rooms, area, age, distance, floor, garden, school, noise], axis=1).astype(np.float32)
    price = 0.9 + 0.03 * area - 0.01 * age - 0.08 * distance + 0.3 * garden + 0.1 * school
    price = np.exp(0.5 * price) + rng.normal(0, 0.1, n)
    price = np.clip(price, 0.2, None)
    price[rng.random(n) < 0.02] = 0.0  # unsold: recorded as 0
    return features, price.astype(np.float32)


class HousingDataset(Dataset):
    def __init__(self, features, targets):
        self.features = torch.from_numpy(features)
        self.targets = torch.from_numpy(targets).unsqueeze(1)

    def __len__(self):
        return len(self.features)

    def __getitem__(self, index):
        return self.features[index], self.targets[index]
