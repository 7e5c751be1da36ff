"""The MLP regression with gradient accumulation, clearing the gradients only once per epoch.

The optimizer.zero_grad() after each step was dropped: the accumulated gradient of every window keeps growing by the
earlier windows' gradients, so each step of the epoch applies the sum of all the epoch's gradients so far.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def housing_records(count, seed, noise=0.3):
    """Eight standardised features; the price is a smooth nonlinear function of them plus noise."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(count, 8, generator=generator)
    price = torch.sin(x[:, 0]) + 0.5 * x[:, 1] * x[:, 2] - 0.3 * x[:, 3] ** 2 + 0.8 * x[:, 4]
    y = price + noise * torch.randn(count, generator=generator)
    return TensorDataset(x, y.unsqueeze(1))


class MLP(nn.Module):
    def __init__(self, hidden=64, dropout=0.1):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(8, hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.layers(x)


def train(args, model, device, loader, optimizer, epoch):
    model.train()
    optimizer.zero_grad()
    running = 0.0
    for batch_idx, (data, target) in enumerate(loader):
        data, target = data.to(device), target.to(device)
        loss = F.mse_loss(model(data), target) / args.accumulation_steps
        loss.backward()
        running += loss.item()
        if (batch_idx + 1) % args.accumulation_steps == 0:
            nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()  # BUG: training-logic (gradients of earlier windows are never cleared)
    if epoch % args.log_interval == 0:
        print(f"epoch {epoch}: train loss: {running * args.accumulation_steps / len(loader):.4f}")


def validate(model, device, loader):
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for data, target in loader:
            data, target = data.to(device), target.to(device)
            total += F.mse_loss(model(data), target, reduction="sum").item()
            count += len(data)
    return total / count


def main():
    parser = argparse.ArgumentParser(description="MLP regression with gradient accumulation")
    parser.add_argument("--train-rows", type=int, default=1024)
    parser.add_argument("--noise", type=float, default=0.3, help="standard deviation of the price noise")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--accumulation-steps", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--lr-step", type=int, default=3, help="halve the learning rate every N epochs")
    parser.add_argument("--max-grad-norm", type=float, default=1.0)
    parser.add_argument("--log-interval", type=int, default=1)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_set = housing_records(args.train_rows, seed=1, noise=args.noise)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    val_loader = DataLoader(housing_records(512, seed=2, noise=args.noise), batch_size=256)

    model = MLP(args.hidden, args.dropout).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=args.lr_step, gamma=0.5)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        val_loss = validate(model, device, val_loader)
        scheduler.step()
        if epoch % args.log_interval == 0:
            print(f"epoch {epoch}: val loss: {val_loss:.4f}")


if __name__ == "__main__":
    main()
