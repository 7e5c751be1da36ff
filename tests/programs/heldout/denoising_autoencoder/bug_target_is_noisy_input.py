"""Denoising autoencoder, bug: the training pairs are (noisy, noisy): the target is the input itself instead of the
clean signal.

Symptom (plain run): the training loss floors at 0.21 (it now measures the noise, which no model can predict) instead
of 0.10; the bottleneck still smooths a little, so validation ends near the clean run's (0.089 against 0.086) by luck
of the architecture.
"""

import argparse

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from trainer import Callback, Trainer


class DenoisingAutoencoder(nn.Module):
    def __init__(self, dim=32, code=6):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, code))
        self.decoder = nn.Sequential(nn.Linear(code, 64), nn.ReLU(), nn.Linear(64, dim))

    def forward(self, x):
        return self.decoder(self.encoder(x))


class PrintLogs(Callback):
    def on_epoch_end(self, trainer, epoch, logs):
        print(f"epoch {epoch + 1} loss: {logs['loss']:.4f}")


class Validation(Callback):
    def __init__(self, noisy, clean):
        self.noisy, self.clean = noisy, clean

    def on_epoch_end(self, trainer, epoch, logs):
        trainer.model.eval()
        with torch.no_grad():
            error = nn.functional.mse_loss(trainer.model(self.noisy), self.clean).item()
        trainer.model.train()
        print(f"  validation denoising mse: {error:.4f}")


def make_signals(n, dim=32, seed=0):
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, dim)
    freq = rng.uniform(1, 4, size=(n, 1))
    phase = rng.uniform(0, 2 * np.pi, size=(n, 1))
    amp = rng.uniform(0.5, 1.5, size=(n, 1))
    clean = amp * np.sin(2 * np.pi * freq * t + phase)
    noisy = clean + rng.normal(0, 0.4, size=clean.shape)
    return torch.tensor(noisy, dtype=torch.float32), torch.tensor(clean, dtype=torch.float32)


def main():
    parser = argparse.ArgumentParser(description="Denoising autoencoder")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args()
    torch.manual_seed(0)

    noisy, clean = make_signals(2400)
    train_set = TensorDataset(noisy[:2000], noisy[:2000])  # BUG: leakage|training-logic target equals input
    loader = DataLoader(train_set, batch_size=64, shuffle=True)

    model = DenoisingAutoencoder()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    callbacks = [PrintLogs(), Validation(noisy[2000:], clean[2000:])]
    trainer = Trainer(model, optimizer, nn.MSELoss(), scheduler=scheduler, callbacks=callbacks)
    trainer.fit(loader, epochs=args.epochs)


if __name__ == "__main__":
    main()
