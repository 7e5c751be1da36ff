"""A variational auto-encoder whose loss is summed over the batch (the loss of the PyTorch VAE example), on small
synthetic binary images. Summed losses are in the thousands, and so are their healthy gradient norms."""

import argparse

import torch
import torch.nn.functional as F
from torch import nn, optim


class VAE(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(196, 64)
        self.fc21 = nn.Linear(64, 8)
        self.fc22 = nn.Linear(64, 8)
        self.fc3 = nn.Linear(8, 64)
        self.fc4 = nn.Linear(64, 196)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        return mu + torch.randn_like(std) * std

    def decode(self, z):
        return torch.sigmoid(self.fc4(F.relu(self.fc3(z))))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 196))
        return self.decode(self.reparameterize(mu, logvar)), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    bce = F.binary_cross_entropy(recon_x, x.view(-1, 196), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def train(model, data, optimizer, batch_size: int) -> float:
    model.train()
    train_loss = 0.0
    for start in range(0, len(data), batch_size):
        batch = data[start : start + batch_size]
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(batch)
        loss = loss_function(recon_batch, batch, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
    return train_loss / len(data)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args()
    torch.manual_seed(0)
    prototypes = (torch.rand(6, 14, 14) > 0.5).float()  # six "digits"; each image is one with 5% of pixels flipped
    images = prototypes[torch.arange(1024) % 6]
    flips = (torch.rand(1024, 14, 14) < 0.05).float()
    data = (images - flips).abs()
    model = VAE()
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(1, args.epochs + 1):
        print(f"epoch {epoch} average loss {train(model, data, optimizer, args.batch_size):.4f}")


if __name__ == "__main__":
    main()
