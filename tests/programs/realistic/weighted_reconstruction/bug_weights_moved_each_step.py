"""Denoising with a position-weighted loss, bug: the loss function converts the numpy weights and moves them to the
device at every call, i.e. at every step (on a GPU, one host-to-device copy and a synchronisation per step)."""

import argparse

import numpy as np
import torch
from data import BufferedBatches, make_signals
from torch import nn

EDGE_WEIGHTS = np.concatenate([np.full(4, 3.0), np.ones(16), np.full(4, 3.0)]).astype(np.float32)


class EdgeWeightedMSE:
    def __init__(self, weights):
        self.weights = weights

    def __call__(self, output, target):
        weights = torch.from_numpy(self.weights).to(output.device, non_blocking=True)  # BUG: device|performance
        return (weights * (output - target) ** 2).mean()


def train(model, batches, criterion, optimizer, device, epochs):
    for epoch in range(epochs):
        total = 0.0
        for noisy, clean in batches:
            noisy, clean = torch.from_numpy(noisy).to(device), torch.from_numpy(clean).to(device)
            optimizer.zero_grad()
            loss = criterion(model(noisy), clean)
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"epoch {epoch + 1} loss: {total / len(batches):.4f}")


def main():
    parser = argparse.ArgumentParser(description="weighted denoising")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    noisy, clean = make_signals(1024)
    batches = BufferedBatches(noisy, clean, args.batch_size)
    model = nn.Sequential(nn.Linear(24, 48), nn.ReLU(), nn.Linear(48, 24)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    train(model, batches, EdgeWeightedMSE(EDGE_WEIGHTS), optimizer, device, args.epochs)


if __name__ == "__main__":
    main()
