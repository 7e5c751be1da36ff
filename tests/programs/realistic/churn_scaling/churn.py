"""Synthetic churn table and the small helpers the churn scripts share: column statistics and a tensor Dataset."""

import numpy as np
import torch
from torch.utils.data import Dataset

COLUMNS = ["tenure", "monthly_fee", "support_calls", "data_gb", "contract_months", "late_payments"]


def load_churn(n=1500, seed=7):
    """Customer rows (float32, raw units) and a churned flag (0/1) that depends on fees, calls and tenure."""
    rng = np.random.default_rng(seed)
    tenure = rng.gamma(2.0, 14.0, n)
    fee = rng.normal(55.0, 18.0, n)
    calls = rng.poisson(2.0, n).astype(np.float64)
    data_gb = rng.lognormal(2.0, 0.6, n)
    contract = rng.choice([1.0, 12.0, 24.0], n)
    late = rng.poisson(0.7, n).astype(np.float64)
    score = 0.04 * (fee - 55.0) + 0.5 * (calls - 2.0) - 0.05 * (tenure - 28.0) - 0.06 * (contract - 12.0) + 0.4 * late
    churned = (score + rng.normal(0.0, 0.8, n) > 0).astype(np.float32)
    table = np.stack([tenure, fee, calls, data_gb, contract, late], axis=1).astype(np.float32)
    return table, churned


def column_stats(table):
    """Per-column mean and standard deviation, as a scaler would fit them."""
    return table.mean(axis=0), table.std(axis=0) + 1e-6


class ChurnDataset(Dataset):
    def __init__(self, features, churned):
        self.features = torch.as_tensor(features)
        self.churned = torch.as_tensor(churned).unsqueeze(1)

    def __len__(self):
        return len(self.features)

    def __getitem__(self, index):
        return self.features[index], self.churned[index]
