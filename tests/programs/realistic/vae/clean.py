"""Variational autoencoder on synthetic 8x8 images in [0, 1] (noisy copies of six binary prototypes).

The loss is the usual summed reconstruction BCE plus the KL divergence, so its scale is that of a whole batch
(hundreds to thousands) and so are its gradients; the training loss is accumulated with ``.item()``.
"""

import argparse

import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 48)
        self.fc21 = nn.Linear(48, 4)
        self.fc22 = nn.Linear(48, 4)
        self.fc3 = nn.Linear(4, 48)
        self.fc4 = nn.Linear(48, 64)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 64))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    """Reconstruction + KL divergence, both summed over the batch."""
    bce = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def synthetic_images(count, seed):
    prototypes = (torch.rand(6, 64, generator=torch.Generator().manual_seed(5)) > 0.5).float()
    generator = torch.Generator().manual_seed(seed)
    which = torch.randint(0, 6, (count,), generator=generator)
    noise = 0.3 * torch.rand(count, 64, generator=generator)
    images = (prototypes[which] - noise).abs()
    return TensorDataset(images.view(count, 1, 8, 8), which)


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    train_loss = 0
    for batch_idx, (data, _) in enumerate(train_loader):
        data = data.to(device)
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            seen = batch_idx * len(data)
            print(f"Train Epoch: {epoch} [{seen}/{len(train_loader.dataset)}]\tLoss: {loss.item() / len(data):.4f}")
    print(f"====> Epoch: {epoch} Average loss: {train_loss / len(train_loader.dataset):.4f}")


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    with torch.no_grad():
        for data, _ in test_loader:
            data = data.to(device)
            recon_batch, mu, logvar = model(data)
            test_loss += loss_function(recon_batch, data, mu, logvar).item()
    print(f"====> Test set loss: {test_loss / len(test_loader.dataset):.4f}")


def main():
    parser = argparse.ArgumentParser(description="VAE on synthetic images")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=8)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_loader = DataLoader(synthetic_images(1024, seed=1), batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(synthetic_images(256, seed=2), batch_size=args.batch_size)

    model = VAE().to(device)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)


if __name__ == "__main__":
    main()
