"""Clean: a model written against a training library (``minilog``, a stand-in for PyTorch Lightning's
``LightningModule.log``) that moves its own tensors at every ``self.log`` call; the user moves a 0-dim tensor each step
too, for logging. Neither is the user's repeated-transfer bug: no device finding."""

import argparse
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "site-packages"))

from minilog import LoggingModule


class Classifier(LoggingModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        self.log("train_loss", loss)
        self.log("train_acc", (logits.argmax(1) == y).float().mean())
        return loss


def train(model, X, y, optimizer, device, epoch):
    model.train()
    best = torch.tensor(float("inf"))
    unit = torch.tensor(1.0)  # one number, moved with the logged value each step
    for start in range(0, len(X), 32):
        optimizer.zero_grad()
        loss = model.training_step((X[start : start + 32].to(device), y[start : start + 32].to(device)))
        loss.backward()
        optimizer.step()
        best = torch.minimum(best, loss.detach().cpu())
        shown = best.to(device) * unit.to(device)  # 0-dim tensors moved for logging: not worth a warning
    print(f"epoch {epoch}: best loss {shown.item():.3f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch.device("cpu")
    X, y = torch.randn(256, 10), torch.randint(0, 3, (256,))
    model = Classifier().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(1, args.epochs + 1):
        train(model, X, y, optimizer, device, epoch)


if __name__ == "__main__":
    main()
