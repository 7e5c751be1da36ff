"""A LightningModule whose backward makes the first non-finite value: ``sqrt`` of an output masked to zero has an
infinite derivative there, so step 1's backward (run inside ``optimizer.step(closure)``) fills the gradients with
Inf/NaN while every forward value stays finite. Synthetic data; nothing is downloaded."""

import lightning as L
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class MaskedNorm(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(8, 4) * 0.3)

    def forward(self, x):
        h = F.linear(x, self.w)
        return torch.sqrt(h * h * (h > 10))  # @nan

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.mse_loss(self(x).sum(1, keepdim=True), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def main():
    generator = torch.Generator().manual_seed(0)
    x, y = torch.randn(128, 4, generator=generator), torch.randn(128, 1, generator=generator)
    torch.manual_seed(0)
    trainer = L.Trainer(
        accelerator="cpu",
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(MaskedNorm(), DataLoader(TensorDataset(x, y), batch_size=32))


if __name__ == "__main__":
    main()
