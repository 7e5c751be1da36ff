"""Training and evaluation loops of the energy-use regressor (one epoch each)."""

import torch
import torch.nn.functional as F


def train_one_epoch(model, loader, optimizer):
    model.train()
    total, count = 0.0, 0
    for features, target in loader:
        optimizer.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(features).squeeze(-1), target)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(target)
        count += len(target)
    return total / count


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    total, count = 0.0, 0
    for features, target in loader:
        total += F.l1_loss(model(features).squeeze(-1), target, reduction="sum").item()
        count += len(target)
    return total / count
