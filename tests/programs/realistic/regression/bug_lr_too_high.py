"""The polynomial regression with a step size far too high for its hand-written SGD update (0.9 instead of 0.5).

Every update overshoots: the loss climbs by orders of magnitude epoch after epoch (0.8 to ~1e17) but stays finite
for the whole run, so nothing turns NaN.
"""

import argparse

import torch
import torch.nn.functional as F

POLY_DEGREE = 4
W_TARGET = torch.tensor([[0.5], [-1.2], [0.8], [0.3]])
B_TARGET = torch.tensor([0.7])


def make_features(x):
    """Builds features i.e. a matrix with columns [x, x^2, x^3, x^4]."""
    x = x.unsqueeze(1)
    return torch.cat([x**i for i in range(1, POLY_DEGREE + 1)], 1)


def f(x):
    """Approximated function."""
    return x.mm(W_TARGET) + B_TARGET.item()


def get_batch(generator, batch_size=32):
    """Builds a batch i.e. (x, f(x)) pair."""
    random = torch.rand(batch_size, generator=generator) * 2 - 1
    x = make_features(random)
    y = f(x) + 0.01 * torch.randn(batch_size, 1, generator=generator)
    return x, y


def train(args, fc, generator, epoch):
    fc.train()
    for batch_idx in range(args.steps_per_epoch):
        batch_x, batch_y = get_batch(generator, args.batch_size)
        fc.zero_grad()
        output = F.mse_loss(fc(batch_x), batch_y)
        output.backward()
        for param in fc.parameters():
            param.data.add_(param.grad, alpha=-args.lr)
        if batch_idx % args.log_interval == 0:
            print(f"epoch {epoch} step {batch_idx}: loss {output.item():.6f}")


def test(fc, test_x, test_y):
    fc.eval()
    with torch.no_grad():
        loss = F.mse_loss(fc(test_x), test_y).item()
    print(f"test loss: {loss:.6f}")
    return loss


def main():
    parser = argparse.ArgumentParser(description="polynomial regression with a hand-written SGD update")
    parser.add_argument("--lr", type=float, default=0.9)  # BUG: dynamics (lr=0.9 overshoots: the loss climbs)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--steps-per-epoch", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--log-interval", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    test_x, test_y = get_batch(torch.Generator().manual_seed(12345), 256)
    fc = torch.nn.Linear(W_TARGET.size(0), 1)
    for epoch in range(1, args.epochs + 1):
        train(args, fc, generator, epoch)
        test(fc, test_x, test_y)
    print(f"learned bias {fc.bias.item():+.2f} (target {B_TARGET.item():+.2f})")


if __name__ == "__main__":
    main()
