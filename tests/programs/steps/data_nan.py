"""A tabular regressor whose table has a missing value: the CSV reader turns the empty field into NaN, and the loss is
NaN from the batch that holds it. The learning rate is fine; the data is not."""

import argparse
import io

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def load_table() -> np.ndarray:
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(96, 5)).round(3)
    lines = [",".join(str(v) for v in row) for row in rows]
    lines[40] = lines[40].replace(str(rows[40, 1]), "", 1)  # a missing measurement: the empty field becomes NaN
    return np.genfromtxt(io.StringIO("\n".join(lines)), delimiter=",")


def train(model, loader, optimizer) -> float:
    total = 0.0
    for features, target in loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(features), target)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(loader)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    table = torch.tensor(load_table(), dtype=torch.float32)
    loader = DataLoader(TensorDataset(table[:, :4], table[:, 4:]), batch_size=8)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(1, args.epochs + 1):
        print(f"epoch {epoch} loss {train(model, loader, optimizer):.4f}")


if __name__ == "__main__":
    main()
