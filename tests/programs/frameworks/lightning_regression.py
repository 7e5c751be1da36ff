"""A small PyTorch Lightning regression, written the way Lightning's own examples are: a LightningModule with
``training_step`` / ``validation_step`` / ``configure_optimizers``, ``self.log`` for the metrics, ``Trainer.fit``.

Lightning runs automatic optimisation: ``optimizer.step(closure)``, where the closure runs ``training_step``,
``zero_grad`` and ``backward`` inside the step. With ``--lr 5`` the weights blow up and the model's last ``F.linear``
overflows at step 4; ``--lr 0.01`` (the default) trains cleanly. Data is synthetic; nothing is downloaded.
"""

import argparse

import lightning as L
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Regressor(L.LightningModule):
    def __init__(self, lr: float, hidden: int = 32):
        super().__init__()
        self.lr = lr
        self.w1 = torch.nn.Parameter(torch.randn(hidden, 16) * 0.3)
        self.b1 = torch.nn.Parameter(torch.zeros(hidden))
        self.w2 = torch.nn.Parameter(torch.randn(1, hidden) * 0.3)
        self.b2 = torch.nn.Parameter(torch.zeros(1))

    def forward(self, x):
        h = torch.relu(F.linear(x, self.w1, self.b1))
        return F.linear(h, self.w2, self.b2)  # @nan

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.log("train_loss", loss)  # @log train
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.log("val_loss", loss)  # @log val

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)  # @optimizer


def make_loaders(batch_size: int):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(768, 16, generator=generator) * 2.0
    y = x[:, :1] * 2.0 - x[:, 1:2] + 0.1 * torch.randn(768, 1, generator=generator)
    train = DataLoader(TensorDataset(x[:640], y[:640]), batch_size=batch_size)
    val = DataLoader(TensorDataset(x[640:], y[640:]), batch_size=64)
    return train, val


def main():
    parser = argparse.ArgumentParser(description="Lightning regression on synthetic data")
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = Regressor(args.lr)
    train, val = make_loaders(batch_size=32)
    trainer = L.Trainer(
        accelerator="cpu",
        max_epochs=args.epochs,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, train, val)  # @fit


if __name__ == "__main__":
    main()
